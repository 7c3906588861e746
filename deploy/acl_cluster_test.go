package deploy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms/lua"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// The passwords the cluster test renders users-cluster.acl with.
var (
	clusterWebdis      = redistest.Options{Username: "default", Password: "webdis-pw"}
	clusterReplication = redistest.Options{Username: "ratelimit-replication", Password: "replication-pw"}
	clusterAdmin       = redistest.Options{Username: "ratelimit-admin", Password: "admin-pw"}
	aclReader          = redistest.Options{Username: "acl-reader", Password: "reader-pw"}
)

// renderClusterUsers renders users-cluster.acl with the test's passwords.
func renderClusterUsers(t *testing.T) string {
	t.Helper()
	return renderTemplate(t, "users-cluster.acl", map[string]string{
		"FILTER": filterUser.Password, "OPERATOR": operator.Password, "WEBDIS": clusterWebdis.Password,
		"REPLICATION": clusterReplication.Password, "ADMIN": clusterAdmin.Password,
	})
}

// clusterConfArgs are redis-cluster.conf's settings as redis-server flags,
// but those the test harness sets for its loopback cluster (port, bind,
// dir, aclfile, logging, cluster-enabled and cluster-config-file).
func clusterConfArgs(t *testing.T) []string {
	t.Helper()
	skip := map[string]bool{"port": true, "bind": true, "dir": true, "aclfile": true, "logfile": true,
		"daemonize": true, "cluster-enabled": true, "cluster-config-file": true}
	var args []string
	for _, d := range confDirectives(t, "deploy/redis/redis-cluster.conf") {
		if !skip[d[0]] {
			args = append(args, "--"+d[0], d[1])
		}
	}
	return args
}

// confDirectives reads a redis.conf file's directives as name and value,
// in order, a quoted empty value as "".
func confDirectives(t *testing.T, rel string) [][2]string {
	t.Helper()
	data, err := os.ReadFile(repoPath(rel))
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, _ := strings.Cut(line, " ")
		if value == `""` {
			value = ""
		}
		out = append(out, [2]string{name, value})
	}
	return out
}

// A Redis Cluster of 3 masters and 3 replicas, each node with
// redis-cluster.conf's settings, users-cluster.acl and a Webdis running
// deploy/webdis/node.json: every node has the same users; replicas
// replicate as ratelimit-replication; through every Webdis, FCALL and
// CLUSTER NODES pass while CLUSTER SETSLOT (which Webdis's prefix match
// lets through) is refused by Redis (NOPERM) and EVAL by Webdis (403);
// ratelimit-admin reshards a slot of the filter's keys.
func TestShippedACLOnCluster(t *testing.T) {
	t.Parallel()
	acl := filepath.Join(t.TempDir(), "users.acl")
	reader := "user " + aclReader.Username + " on >" + aclReader.Password +
		" resetchannels -@all +acl|list +client|list +info +ping\n"
	if err := os.WriteFile(acl, []byte(renderClusterUsers(t)+reader), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append(clusterConfArgs(t), "--masterauth", clusterReplication.Password)
	c := redistest.StartClusterWith(t, redistest.ClusterOptions{Masters: 3, Replicas: 1, ACL: acl,
		Admin: clusterAdmin, Hostnames: true, Args: args})

	// The same users on every node, and each replica's link to its
	// master runs as ratelimit-replication.
	var first []string
	for i, s := range c.Nodes {
		r := redistest.NewClient(s.Addr, aclReader)
		defer r.Close()
		users, err := r.Strings("ACL", "LIST")
		if err != nil {
			t.Fatal(err)
		}
		for j, u := range users {
			users[j] = normalACL(u)
		}
		if i == 0 {
			first = users
		} else if strings.Join(users, "\n") != strings.Join(first, "\n") {
			t.Errorf("node %d: ACL LIST differs from node 0's:\n%s\nwant:\n%s", i, strings.Join(users, "\n"), strings.Join(first, "\n"))
		}
	}
	if len(first) != 6 {
		t.Errorf("ACL LIST: %d users, want users-cluster.acl's 5 and the test's reader:\n%s", len(first), strings.Join(first, "\n"))
	}
	masters, err := c.Masters()
	if err != nil || len(masters) != 3 {
		t.Fatalf("masters: %d, %v", len(masters), err)
	}
	for _, m := range masters {
		r := redistest.NewClient(m.Addr, aclReader)
		defer r.Close()
		list, err := r.Text("CLIENT", "LIST", "TYPE", "replica")
		if err != nil || strings.Count(list, "\n") != 1 || !strings.Contains(list, " user="+clusterReplication.Username+" ") {
			t.Errorf("master %s: replica connections %q (%v), want one as %s", m.Addr, list, err, clusterReplication.Username)
		}
		if err := redistest.LoadLibrary(redistest.NewClient(m.Addr, operator)); err != nil {
			t.Fatalf("install on master %s as the operator: %v", m.Addr, err)
		}
	}
	for _, s := range c.Nodes { // the library reaches the replicas (asynchronously)
		op := redistest.NewClient(s.Addr, operator)
		defer op.Close()
		var libs any
		deadline := time.Now().Add(time.Minute) // against a hang only
		for err = errors.New("not yet"); err != nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if libs, err = op.Do("FUNCTION", "LIST", "LIBRARYNAME", lua.Library.Name); err == nil && !strings.Contains(fmt.Sprint(libs), lua.Library.Name) {
				err = errors.New("not listed")
			}
		}
		if err != nil {
			t.Errorf("node %s: FUNCTION LIST %q (%v), want %s", s.Addr, libs, err, lua.Library.Name)
		}
	}
	checkClusterRights(t, c)
	checkAdminKeys(t, c)
	checkClusterWebdis(t, c)

	// ratelimit-admin moves a slot that holds a key of the filter's.
	key := "rl:{acl-cluster|u}:tier"
	slot, err := c.KeySlot(key)
	if err != nil {
		t.Fatal(err)
	}
	src, err := c.OwnerOf(slot)
	if err != nil {
		t.Fatal(err)
	}
	op := redistest.NewClient(src.Addr, operator)
	defer op.Close()
	if _, err := op.Do("SET", key, "gold"); err != nil {
		t.Fatal(err)
	}
	dst := masters[0]
	if dst == src {
		dst = masters[1]
	}
	if err := c.BeginMigration(slot, src, dst); err != nil {
		t.Fatal(err)
	}
	if n, err := c.MoveKeys(slot, 10); err != nil || n != 1 {
		t.Fatalf("MoveKeys as %s: %d, %v", clusterAdmin.Username, n, err)
	}
	if err := c.FinishMigration(slot); err != nil {
		t.Fatal(err)
	}
	moved := redistest.NewClient(dst.Addr, operator)
	defer moved.Close()
	if v, err := moved.Text("GET", key); err != nil || v != "gold" {
		t.Errorf("after the move, GET on the new owner: %q, %v", v, err)
	}
	reshardAsAdmin(t, c)
}

// normalACL is an ACL LIST line with the rules of its root and of each
// selector sorted, and its selectors sorted: Redis lists a user's
// commands in no fixed order.
func normalACL(line string) string {
	var parts []string
	root, rest, _ := strings.Cut(line, " (")
	parts = append(parts, sortedWords(root))
	var sels []string
	for rest != "" {
		sel, after, _ := strings.Cut(rest, ")")
		sels = append(sels, "("+sortedWords(sel)+")")
		_, rest, _ = strings.Cut(after, "(")
	}
	slices.Sort(sels)
	return strings.Join(append(parts, sels...), " ")
}

func sortedWords(s string) string {
	w := strings.Fields(s)
	slices.Sort(w)
	return strings.Join(w, " ")
}

// checkClusterRights checks the CLUSTER subcommands each user may run: the
// filter's CLUSTER NODES only, the operator's NODES and SLOTS, the
// replication user nothing but replication.
func checkClusterRights(t *testing.T, c *redistest.Cluster) {
	t.Helper()
	s := c.Nodes[0]
	for _, tc := range []struct {
		user    redistest.Options
		args    []any
		refused bool
	}{
		{filterUser, []any{"CLUSTER", "NODES"}, false},
		{clusterWebdis, []any{"CLUSTER", "NODES"}, false},
		{filterUser, []any{"CLUSTER", "SLOTS"}, true},
		{filterUser, []any{"CLUSTER", "SETSLOT", 0, "STABLE"}, true},
		{filterUser, []any{"CLUSTER", "INFO"}, true},
		{operator, []any{"CLUSTER", "NODES"}, false},
		{operator, []any{"CLUSTER", "SLOTS"}, false},
		{operator, []any{"CLUSTER", "RESET"}, true},
		{clusterReplication, []any{"GET", "rl:{x}:tier"}, true},
		{clusterReplication, []any{"CLUSTER", "NODES"}, true},
		{clusterAdmin, []any{"GET", "rl:{x}:tier"}, true},
		{clusterAdmin, []any{"FLUSHALL"}, true},
		{clusterAdmin, []any{"ASKING"}, true}, // MIGRATE sends RESTORE-ASKING; nothing else needs it
	} {
		cl := redistest.NewClient(s.Addr, tc.user)
		_, err := cl.Do(tc.args...)
		cl.Close()
		if refused := isRedisError(err, "NOPERM"); refused != tc.refused {
			t.Errorf("%s: %v: %v, want refused %v", tc.user.Username, tc.args, err, tc.refused)
		}
	}
}

// checkClusterWebdis runs deploy/webdis/node.json in front of every node,
// as the default user (users-cluster.acl: the filter's rights), and sends
// it what the filter sends and what it must refuse.
func checkClusterWebdis(t *testing.T, c *redistest.Cluster) {
	t.Helper()
	data, err := os.ReadFile(repoPath("deploy/webdis/node.json"))
	if err != nil {
		t.Fatal(err)
	}
	var conf map[string]any
	if err := json.Unmarshal(data, &conf); err != nil {
		t.Fatal(err)
	}
	conf["redis_auth"] = clusterWebdis.Password
	out, err := json.Marshal(conf)
	if err != nil {
		t.Fatal(err)
	}
	user, pass := "ratelimit", "webdis-demo-password"
	for _, s := range c.Nodes {
		base := "http://" + startWebdisConfig(t, out, s.Addr)
		epoch := "FCALL/" + lua.Library.Epoch + "/1/rl%3Aepoch/e"
		for _, tc := range []struct {
			path, user string
			want       int
			body       string // a part of the reply
		}{
			{"CLUSTER/NODES", user, 200, "," + c.Hostname(s) + " myself,"},
			{"CLUSTER/NODES", "", 403, ""},
			{epoch, user, 200, `{"FCALL":`}, // checked below
			{"CLUSTER/SETSLOT/0/STABLE", user, 200, "NOPERM"},
			{"CLUSTER/RESET", user, 200, "NOPERM"},
			{"CLUSTER/FAILOVER", user, 200, "NOPERM"},
			{"EVAL/return%201/0", user, 403, ""},
			{"FLUSHALL", user, 403, ""},
			{"FUNCTION/LIST", user, 403, ""},
		} {
			req, _ := http.NewRequest("POST", base+"/", strings.NewReader(tc.path))
			if tc.user != "" {
				req.SetBasicAuth(tc.user, pass)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			bad := resp.StatusCode != tc.want || !strings.Contains(string(body), tc.body)
			if tc.path == epoch { // 0 on the owner of rl:epoch's slot, else -MOVED to it
				bad = bad || string(body) != `{"FCALL":0}` && !strings.Contains(string(body), `[false,"MOVED `)
			}
			if bad {
				t.Errorf("node %s: Webdis %s as %q: %d %.300q, want %d with %q", s.Addr, tc.path, tc.user, resp.StatusCode, body, tc.want, tc.body)
			}
		}
	}
}
