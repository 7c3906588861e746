package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms/lua"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// operatorACL is the ratelimit-operator line of deploy/redis/users.acl as
// ACL SETUSER arguments, with password as its password.
func operatorACL(t *testing.T, password string) []any {
	t.Helper()
	data, err := os.ReadFile("../../deploy/redis/users.acl")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(password))
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == "ratelimit-operator" {
			args := []any{"ACL", "SETUSER"}
			for _, w := range f[1:] {
				args = append(args, strings.Replace(w, "#OPERATOR_PASSWORD_SHA256", "#"+hex.EncodeToString(sum[:]), 1))
			}
			return args
		}
	}
	t.Fatal("deploy/redis/users.acl has no ratelimit-operator")
	return nil
}

// The operator's user of deploy/redis/users.acl runs the commands on a
// Redis Cluster: go-redis's cluster client needs nothing more.
func TestOperatorUserOnCluster(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3)
	for _, n := range c.Nodes {
		if _, err := n.Do(operatorACL(t, "op-pw")...); err != nil {
			t.Fatal(err)
		}
		if _, err := n.Do("FUNCTION", "FLUSH"); err != nil {
			t.Fatal(err)
		}
	}
	e := writeConfig(t, "rl:", bothRules("rl:"))
	e.conn = []string{"--cluster", "--redis", c.Nodes[0].Addr, "--username", "ratelimit-operator", "--password", "op-pw"}
	e.do = func(key string, args ...any) (any, error) { return c.Do(key, args...) }
	var in installed
	e.json(&in, "install")
	if len(in.Servers) != 3 {
		t.Errorf("install: %+v", in)
	}
	e.ok("libraries")
	e.ok("block", "--rule", "api", "--ttl", "1h", "alice")
	e.ok("tier", "set", "--rule", "plan", "--tier", "gold", "bob")
	e.ok("override", "set", "--rule", "plan", "--limits", `[{"algorithm":"sliding_log","limit":9,"window":"1m"}]`, "bob")
	var sh shown
	e.json(&sh, "show", "--rule", "api", "alice")
	if !sh.Blocked {
		t.Errorf("show: %+v", sh)
	}
	e.ok("unblock", "--rule", "api", "alice")
	e.ok("list")
	e.ok("reset", "--all", "--rule", "plan", "bob")
	if _, errOut, code := e.ctl("uninstall", "--force", lua.Library.Name); code != exitOK {
		t.Errorf("uninstall --force: %s", errOut)
	}
}
