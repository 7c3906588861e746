package deploy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// renderUsers runs redis/render.sh on a template of deploy/redis with the
// given passwords and returns the ACL file it writes.
func renderUsers(t *testing.T, template, filterPW, operatorPW, webdisPW string) string {
	t.Helper()
	return renderTemplate(t, template, map[string]string{"FILTER": filterPW, "OPERATOR": operatorPW, "WEBDIS": webdisPW})
}

// renderTemplate runs redis/render.sh with $RATELIMIT_<NAME>_PASSWORD set
// for each name of passwords.
func renderTemplate(t *testing.T, template string, passwords map[string]string) string {
	t.Helper()
	cmd := exec.Command("sh", repoPath("deploy/redis/render.sh"), repoPath("deploy/redis/"+template))
	cmd.Env = os.Environ()
	for name, pw := range passwords {
		cmd.Env = append(cmd.Env, "RATELIMIT_"+name+"_PASSWORD="+pw)
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("render.sh %s: %v", template, err)
	}
	return string(out)
}

// aclUsers maps each user of an ACL file to its rules, the password hash
// cut out as "#HASH".
func aclUsers(t *testing.T, acl string) (rules, hashes map[string]string) {
	t.Helper()
	rules, hashes = map[string]string{}, map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(acl), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "user" {
			t.Fatalf("ACL line %q: want user NAME RULES...", line)
		}
		for i, w := range f {
			if strings.HasPrefix(w, "#") {
				hashes[f[1]], f[i] = w[1:], "#HASH"
			}
		}
		rules[f[1]] = strings.Join(f[2:], " ")
	}
	return rules, hashes
}

func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// The templates: the same filter and operator users; default is off, or,
// for Webdis, has exactly the filter's rights. Unrendered, Redis
// refuses them; render.sh refuses to run without the passwords.
func TestShippedACLTemplates(t *testing.T) {
	t.Parallel()
	read := func(name string) string {
		data, err := os.ReadFile(repoPath("deploy/redis/" + name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	plain, _ := aclUsers(t, read("users.acl"))
	webdis, _ := aclUsers(t, read("users-webdis.acl"))
	names := func(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
	if want := []string{"default", "ratelimit-filter", "ratelimit-operator"}; !slices.Equal(names(plain), want) || !slices.Equal(names(webdis), want) {
		t.Fatalf("users %v and %v, want %v in each", names(plain), names(webdis), want)
	}
	// Off and without a password, no client can be default; Redis's own
	// client that replays the append-only file is, and needs its rights
	// (TestShippedRedisConf).
	if plain["default"] != "off resetpass ~* &* +@all" {
		t.Errorf("users.acl: default %q, want it off, passwordless, with every right", plain["default"])
	}
	if webdis["default"] != webdis["ratelimit-filter"] || plain["ratelimit-filter"] != webdis["ratelimit-filter"] ||
		plain["ratelimit-operator"] != webdis["ratelimit-operator"] {
		t.Errorf("users-webdis.acl's default must have exactly the filter's rights, and both files the same users:\n%q\n%q", plain, webdis)
	}
	for _, rights := range []string{plain["ratelimit-filter"], plain["ratelimit-operator"]} {
		if !strings.HasPrefix(rights, "on #HASH resetchannels -@all ") || strings.Count(rights, "@") != 1 {
			t.Errorf("rights %q: want on, a hashed password, no channels, -@all, then single commands (no categories)", rights)
		}
	}

	// The cluster's template: users-webdis.acl's users, a replica's login
	// (PSYNC and REPLCONF: a replica's PING goes before its AUTH) and the
	// admin that forms and reshards the cluster, on rl:* keys only. The
	// filter may read the topology (CLUSTER NODES) and nothing else of
	// CLUSTER; the operator CLUSTER SLOTS (go-redis) and NODES.
	cluster, _ := aclUsers(t, read("users-cluster.acl"))
	if want := []string{"default", "ratelimit-admin", "ratelimit-filter", "ratelimit-operator", "ratelimit-replication"}; !slices.Equal(names(cluster), want) {
		t.Fatalf("users-cluster.acl: users %v, want %v", names(cluster), want)
	}
	for _, u := range []string{"default", "ratelimit-filter", "ratelimit-operator"} {
		if cluster[u] != webdis[u] {
			t.Errorf("users-cluster.acl's %s differs from users-webdis.acl's:\n%s\n%s", u, cluster[u], webdis[u])
		}
	}
	if want := "on #HASH resetchannels -@all +psync +replconf"; cluster["ratelimit-replication"] != want {
		t.Errorf("users-cluster.acl: ratelimit-replication %q, want %q", cluster["ratelimit-replication"], want)
	}
	if admin := cluster["ratelimit-admin"]; !strings.HasPrefix(admin, "on #HASH resetchannels -@all ") || strings.Count(admin, "@") != 1 ||
		!strings.HasSuffix(admin, " ~rl:*") || strings.Contains(admin, "&") {
		t.Errorf("users-cluster.acl: ratelimit-admin %q: want single commands on rl:* keys, no channels", admin)
	}
	clusterRights := regexp.MustCompile(`\+cluster\S*`)
	for user, want := range map[string][]string{"ratelimit-filter": {"+cluster|nodes"}, "ratelimit-operator": {"+cluster|slots", "+cluster|nodes"}} {
		if got := clusterRights.FindAllString(plain[user], -1); !slices.Equal(got, want) {
			t.Errorf("%s: CLUSTER rights %v, want %v", user, got, want)
		}
	}

	cmd := exec.Command("sh", repoPath("deploy/redis/render.sh"), repoPath("deploy/redis/users.acl"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "needs $RATELIMIT_FILTER_PASSWORD") {
		t.Errorf("render.sh without passwords: %v, %s", err, out)
	}
	port := redistest.HoldPort(t).Number
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--aclfile", repoPath("deploy/redis/users.acl")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "password hash must be exactly 64 characters") {
		t.Errorf("redis-server with the unrendered template: %v, %s", err, out)
	}
}

// composeRedis starts Redis with the compose demo's ACL file and loads the
// library as its operator, as the compose demo's install service does.
func composeRedis(t *testing.T) *redistest.Server {
	t.Helper()
	inst := readCompose(t).service(t, "install")
	srv := redistest.StartACL(t, repoPath("deploy/compose/users.acl"),
		redistest.Options{Username: "ratelimit-operator", Password: inst.Environment["RATELIMITCTL_PASSWORD"]})
	if err := redistest.LoadLibrary(srv.Client); err != nil {
		t.Fatal(err)
	}
	return srv
}

// composeUsers reads the compose demo's ACL file, which must be
// users-webdis.acl rendered with the demo's passwords, and returns its
// users' rules and password hashes.
func composeUsers(t *testing.T) (rules, hashes map[string]string) {
	t.Helper()
	data, err := os.ReadFile(repoPath("deploy/compose/users.acl"))
	if err != nil {
		t.Fatal(err)
	}
	c := readCompose(t)
	redis, inst := c.service(t, "redis"), c.service(t, "install")
	if !sameFile(t, redis.mount(t, flagValue(t, redis.Command, "--aclfile")), repoPath("deploy/compose/users.acl")) {
		t.Errorf("redis does not load deploy/compose/users.acl")
	}
	operatorPW := inst.Environment["RATELIMITCTL_PASSWORD"]
	if want := []string{"redis-cli", "--user", "ratelimit-operator", "--pass", operatorPW}; !slices.Equal(redis.Healthcheck.Test[1:6], want) {
		t.Errorf("redis healthcheck %v: want PING as the operator", redis.Healthcheck.Test)
	}
	if want := []string{"--username", "ratelimit-operator", "install"}; !slices.Equal(inst.Command[len(inst.Command)-3:], want) ||
		!slices.Contains(inst.Command, "./cmd/ratelimitctl") || inst.DependsOn["redis"].Condition != "service_healthy" {
		t.Errorf("install %v: want ratelimitctl install as the operator, once redis is healthy", inst.Command)
	}
	_, hashes = aclUsers(t, string(data))
	wc := webdisConfig{}
	if raw, err := os.ReadFile(repoPath("deploy/compose/webdis.json")); err == nil {
		wc = decodeWebdis(t, raw)
	}
	filterPW := parsePluginConfig(t, ComposeHigressWasmPlugin, pluginConfigOf(t, ComposeHigressWasmPlugin)).Redis.Password
	if want := renderUsers(t, "users-webdis.acl", filterPW, operatorPW, wc.redisAuth(t)); string(data) != want {
		t.Errorf("deploy/compose/users.acl is not deploy/redis/users-webdis.acl rendered with the demo's passwords:\n%s\nwant:\n%s", data, want)
	}
	return aclUsers(t, string(data))
}
