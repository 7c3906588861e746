package e2e

// Least privilege (RELIABILITY.md, "Least privilege"): Redis runs the ACL
// users deploy/redis ships, rendered with test passwords by its render.sh;
// the operator loads the library with ratelimitctl install; both builds
// decide as the filter's user, whose every other right is refused.

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/algorithms/lua"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// The passwords the shipped ACL files are rendered with.
const (
	filterPassword   = "filter-test-pw"
	operatorPassword = "operator-test-pw"
	webdisPassword   = "webdis-test-pw" // Redis's default user, as Webdis logs in
)

// aclRules: 2 requests a minute per x-user; tiers from Redis and
// overrides, for the operator's commands.
const aclRules = `"rules":[{"name":"api","key":[{"source":"header","name":"x-user"}],"overrides":true,
	"tiers":{"from":"redis","default":"free","limits":{
	  "free":[{"name":"minute","algorithm":"sliding_log","limit":2,"window":"1m"}],
	  "gold":[{"name":"minute","algorithm":"sliding_log","limit":5,"window":"1m"}]}}}]`

// renderACL renders a template of deploy/redis with render.sh and returns
// the file's path.
func renderACL(t *testing.T, template string) string {
	t.Helper()
	cmd := exec.Command("sh", "../deploy/redis/render.sh", "../deploy/redis/"+template)
	cmd.Env = append(os.Environ(), "RATELIMIT_FILTER_PASSWORD="+filterPassword,
		"RATELIMIT_OPERATOR_PASSWORD="+operatorPassword, "RATELIMIT_WEBDIS_PASSWORD="+webdisPassword)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("render.sh %s: %v", template, err)
	}
	if strings.Contains(string(out), "_SHA256") || strings.Contains(string(out), filterPassword) {
		t.Fatalf("render.sh %s left a placeholder or a password in:\n%s", template, out)
	}
	path := filepath.Join(t.TempDir(), template)
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// aclRedis starts Redis with users-webdis.acl (the filter's user, the
// operator, and default with the filter's rights for Webdis), and installs
// the library as the operator, with ratelimitctl.
func aclRedis(t *testing.T) (*redistest.Server, *ctl) {
	t.Helper()
	srv := redistest.StartACL(t, renderACL(t, "users-webdis.acl"),
		redistest.Options{Username: "ratelimit-operator", Password: operatorPassword})
	op := newCtl(t, `{"redis":{"cluster":"redis"},`+aclRules+`}`,
		"--redis", srv.Addr, "--username", "ratelimit-operator", "--password", operatorPassword)
	if out := op.run("install"); !strings.Contains(out, lua.Library.Name+"  installed") {
		t.Fatalf("ratelimitctl install as the operator: %q", out)
	}
	return srv, op
}

// Both builds decide under the filter's user: the Higress build logged in
// as ratelimit-filter, the stock build through Webdis as default.
func TestACLShippedUsersDecide(t *testing.T) {
	t.Parallel()
	srv, _ := aclRedis(t)
	config := fmt.Sprintf(`{"redis":{"cluster":"redis","timeout":"2s"},%s}`, aclRules)
	higress := startBuild(t, "higress", wasmhost.Config{}, strings.Replace(config, `"timeout"`,
		fmt.Sprintf(`"username":"ratelimit-filter","password":%q,"timeout"`, filterPassword), 1), srv.Addr)
	stock := startBuild(t, "webdis", wasmhost.Config{}, config, redistest.StartWebdisAuth(t, srv.Addr, webdisPassword))
	for name, tg := range map[string]target{"higress": higress, "stock": stock} {
		req := map[string]string{"x-user": name}
		for i, want := range []int{200, 200, 429} {
			o := tg.send(t, req)
			remaining := fmt.Sprintf(`"minute";r=%d;`, max(1-i, 0))
			if o.status != want || o.headers["ratelimit-policy"] != `"minute";q=2;w=60` || !strings.HasPrefix(o.headers["ratelimit"], remaining) {
				t.Errorf("%s: request %d: status %d, headers %v; want %d with RateLimit %s...", name, i+1, o.status, o.headers, want, remaining)
			}
			if want == 429 && o.headers["retry-after"] == "" {
				t.Errorf("%s: the 429 has no Retry-After: %v", name, o.headers)
			}
		}
		if e := tg.metric("ratelimit.redis.errors"); e != 0 {
			t.Errorf("%s: %d Redis errors", name, e)
		}
	}
}

// What the filter's credential is refused, on Redis and through Webdis.
func TestACLFilterCredentialRefused(t *testing.T) {
	t.Parallel()
	srv, op := aclRedis(t)
	op.run("block", "--rule", "api", "--ttl", "1h", "alice")
	op.run("tier", "set", "--rule", "api", "--tier", "gold", "alice")
	op.run("override", "set", "--rule", "api", "--limits", `[{"algorithm":"sliding_log","limit":9,"window":"1m"}]`, "alice")
	admin := srv.Client
	block := "rl:{api|alice}:block"
	before, err := admin.Int("PTTL", block)
	if err != nil || before <= 0 {
		t.Fatalf("the block's PTTL %d (%v)", before, err)
	}

	filter := redistest.NewClient(srv.Addr, redistest.Options{Username: "ratelimit-filter", Password: filterPassword})
	defer filter.Close()
	if who, err := filter.Text("ACL", "WHOAMI"); err != nil || who != "ratelimit-filter" {
		t.Fatalf("ACL WHOAMI: %q (%v)", who, err)
	}
	for _, cmd := range [][]any{
		{"EVAL", "return 1", "0"},
		{"EVALSHA", algorithms.Script.SHA, "0"},
		{"FUNCTION", "LOAD", "#!lua name=evil\nredis.register_function('evil', function() return 1 end)"},
		{"FUNCTION", "FLUSH"},
		{"GET", "other:key"},
		{"FCALL", lua.Library.Epoch, "1", "other:epoch", "e"},
		{"KEYS", "*"},
		{"SELECT", "1"},
		{"FLUSHALL"},
		{"CONFIG", "GET", "*"},
		{"DEL", block}, {"SET", block, "0"}, {"PEXPIRE", block, "1"},
		{"DEL", "rl:{api|alice}:tier"}, {"SET", "rl:{api|alice}:tier", "free"},
		{"DEL", "rl:{api|alice}:override"}, {"SET", "rl:{api|alice}:override", "x"},
		{"SET", "rl:epoch", "0"}, {"DEL", "rl:epoch"}, {"PEXPIRE", "rl:epoch", "1"},
	} {
		if _, err := filter.Do(cmd...); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Errorf("%q as ratelimit-filter: %v; want NOPERM", cmd, err)
		}
	}
	// A block key passed as a limit's state: the function refuses it.
	_, err = filter.Do("FCALL", lua.Library.Settle, "1", block, "s", "l", "1", "60000", "0", "0", "0")
	if err == nil || !strings.Contains(err.Error(), "ERR ratelimit: key 1 has the wrong role") {
		t.Errorf("FCALL settle of a block key: %v; want the role error", err)
	}
	// The operator's allow-oom bump runs INCR, which the filter's user lacks.
	epoch, _ := admin.Text("GET", "rl:epoch")
	_, err = filter.Do("FCALL", lua.Library.Bump, "1", "rl:epoch")
	if now, _ := admin.Text("GET", "rl:epoch"); err == nil || !strings.Contains(err.Error(), "can't run this command") || now != epoch {
		t.Errorf("FCALL bump as ratelimit-filter: %v, the epoch %q → %q; want refused", err, epoch, now)
	}
	if after, err := admin.Int("PTTL", block); err != nil || after > before || after < before-5000 {
		t.Errorf("the block's PTTL went from %d to %d (%v)", before, after, err)
	}

	// Through Webdis, with the filter's HTTP credential.
	base := "http://" + redistest.StartWebdisAuth(t, srv.Addr, webdisPassword)
	for _, path := range []string{"/EVAL/return%201/0", "/EVALSHA/" + algorithms.Script.SHA + "/0",
		"/FUNCTION/LIST", "/SELECT/1", "/FCALL_RO/" + lua.Library.Epoch + "/1/rl:epoch/e", "/GET/rl:epoch"} {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.SetBasicAuth(redistest.WebdisUser, redistest.WebdisPassword)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Errorf("GET %s through Webdis: %d, want 403", path, resp.StatusCode)
		}
	}
}

// The operator's user runs every ratelimitctl command; the filter's user
// cannot block.
func TestACLOperator(t *testing.T) {
	t.Parallel()
	srv, op := aclRedis(t)
	if out := op.run("install"); !strings.Contains(out, "already installed") {
		t.Errorf("install again: %q", out)
	}
	op.run("block", "--rule", "api", "alice")
	var sh ctlShown
	op.json(&sh, "show", "--rule", "api", "alice")
	if !sh.Blocked {
		t.Errorf("show after block: %+v", sh)
	}
	op.run("unblock", "--rule", "api", "alice")
	op.run("tier", "set", "--rule", "api", "--tier", "gold", "bob")
	op.run("override", "set", "--rule", "api", "--limits", `[{"algorithm":"sliding_log","limit":9,"window":"1m"}]`, "carol")
	op.json(&sh, "show", "--rule", "api", "bob")
	if sh.Blocked || sh.Tier != "gold" {
		t.Errorf("show of bob: %+v", sh)
	}
	if out := op.run("list"); !strings.Contains(out, "bob") || !strings.Contains(out, "carol") {
		t.Errorf("list:\n%s", out)
	}
	if out := op.run("libraries"); !strings.Contains(out, lua.Library.Name+"  yes") {
		t.Errorf("libraries:\n%s", out)
	}
	op.run("reset", "--all", "--rule", "api", "bob")

	cmd := exec.Command(ctlPath(t), append(append([]string{}, op.globals[:4]...), "--username", "ratelimit-filter",
		"--password", filterPassword, "block", "--rule", "api", "mallory")...)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "NOPERM") {
		t.Errorf("ratelimitctl block as ratelimit-filter: %v, %s; want refused", err, out)
	}
	if v, err := srv.Client.Do("GET", "rl:{api|mallory}:block"); err != nil || v != nil {
		t.Errorf("the filter's user blocked mallory (%v, %v)", v, err)
	}
}

// On Higress's transport a refused password leaves the connection as the
// default user (the host, as Higress, throws the AUTH reply away): with a
// default user that needs no password, the filter's ACL WHOAMI finds it,
// logs it at critical level and applies failure_mode.
func TestACLWrongUserOnHigressLink(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t) // default: no password, every right
	acl, err := os.ReadFile(renderACL(t, "users.acl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(acl)), "\n") {
		f := strings.Fields(line)
		if f[1] == "default" {
			continue // keep the default user open: the case under test
		}
		args := []any{"ACL", "SETUSER"}
		for _, w := range f[1:] {
			args = append(args, w)
		}
		if _, err := srv.Do(args...); err != nil {
			t.Fatalf("ACL SETUSER %s: %v", f[1], err)
		}
	}
	config := fmt.Sprintf(`{"failure_mode":"deny","redis":{"cluster":"redis","username":"ratelimit-filter","password":"wrong","timeout":"2s"},%s}`, aclRules)
	tg := startBuild(t, "higress", wasmhost.Config{}, config, srv.Addr)
	req := map[string]string{"x-user": "alice"}
	// Each VM's first call may go out before its WHOAMI's reply: send
	// until both VMs have found the wrong user.
	for i := 0; tg.metric("ratelimit.redis.wrong_user") < 2; i++ {
		if i == 50 {
			t.Fatalf("ratelimit.redis.wrong_user %d after %d requests; want one per VM", tg.metric("ratelimit.redis.wrong_user"), i)
		}
		tg.send(t, req)
	}
	for i := range 3 {
		if o := tg.send(t, req); o.status != 503 || o.headers["ratelimit"] != "" {
			t.Errorf("request %d as the default user: %d %v; want failure_mode deny's 503", i+1, o.status, o.headers)
		}
	}
	if logs := strings.Join(tg.h.GuestLogs(wasmhost.LogCritical), "\n"); !strings.Contains(logs, `runs as user "default"`) {
		t.Errorf("critical logs: %q", logs)
	}
	if n := tg.metric("ratelimit.failure_mode.denied"); n < 3 {
		t.Errorf("ratelimit.failure_mode.denied %d, want >= 3", n)
	}
}
