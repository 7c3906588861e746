package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// Every bad input fails with the exit status of its kind and a message on
// stderr naming what was wrong: 2 for a command line that cannot run, 1 for
// one the configuration or Redis refuses.
func TestBadInput(t *testing.T) {
	t.Parallel()
	prefix := redistest.Prefix(t)
	e := newEnvOn(t, server, prefix, bothRules(prefix))
	dir := t.TempDir()
	badConfig := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(badConfig, []byte(`{"redis":{"cluster":"r"},"rules":[{"name":"a","key":[],"limits":[]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, addr := []string{"--config", e.config}, []string{"--redis", server.Addr}
	with := func(args ...string) []string { return append(append(append([]string{}, cfg...), addr...), args...) }
	gold := `[{"name":"minute","algorithm":"sliding_log","limit":5,"window":"1m"}]`
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, exitUsage, "Usage: ratelimitctl COMMAND"},
		{with("frobnicate"), exitUsage, `ratelimitctl: unknown command "frobnicate"`},
		{with("tier", "--rule", "plan"), exitUsage, "tier needs a subcommand: tier set or tier clear"},
		{with("show", "--bogus", "alice"), exitUsage, "ratelimitctl show: flag provided but not defined: --bogus\nRun 'ratelimitctl help show' for usage."},
		{with("show", "alice"), exitUsage, "--rule: required"},
		{append(addr, "show", "--rule", "api", "alice"), exitUsage, "--config: required"},
		{with("block", "--rule", "api", "--ttl", "0", "alice"), exitUsage, `invalid value "0" for flag --ttl: must be at least 1ms`},
		{with("block", "--rule", "api", "--ttl", "soon", "alice"), exitUsage, `invalid value "soon" for flag --ttl: want a duration`},
		{with("block", "--rule"), exitUsage, "flag needs an argument: --rule"},
		{with("tier", "set", "--rule", "plan", "alice"), exitUsage, "--tier: required"},
		{with("override", "set", "--rule", "plan", "alice"), exitUsage, "--limits: required"},
		{with("list", "--cursor", "abc"), exitUsage, `--cursor "abc": want a cursor printed by the previous page: a number`},
		{with("list", "--cursor", "1:0"), exitUsage, `--cursor "1:0"`},
		{with("list", "--count", "0"), exitUsage, "--count 0: must be >= 1"},
		{with("install", "x"), exitUsage, `install takes no arguments, not "x"`},
		{with("uninstall"), exitUsage, "uninstall takes one library name (see ratelimitctl libraries), not 0 arguments"},
		{with("uninstall", "mylib"), exitUsage, `"mylib" is not a rate-limit library: their names start with ratelimit_`},
		{with("list", "alice"), exitUsage, `list takes no PART arguments, not "alice"`},
		{append(cfg, "--redis", "nohost", "show", "--rule", "api", "a"), exitUsage, `--redis "nohost": want host:port`},
		{append(cfg, "--redis", "a:1,b:2", "show", "--rule", "api", "a"), exitUsage, "--redis: 2 addresses need --cluster"},
		{with("--db", "-1", "list"), exitUsage, "--db -1: must be >= 0"},
		{with("--db", "1", "--cluster", "list"), exitUsage, "--db: a Redis Cluster has only database 0"},
		{with("--username", "u", "list"), exitUsage, "--username: needs a password"},

		{append(addr, "--config", filepath.Join(dir, "none.json"), "list"), exitError, "ratelimitctl: --config: open "},
		{append(addr, "--config", badConfig, "list"), exitError, "ratelimitctl: --config " + badConfig + ": rules[0].key: must be an array of 1 to 8 key parts"},
		{append(cfg, "--redis", "127.0.0.1:1", "list"), exitError, "ratelimitctl: --redis 127.0.0.1:1: dial tcp 127.0.0.1:1: connect: connection refused"},
		{with("show", "--rule", "nope", "alice"), exitError, `ratelimitctl: --rule: no rule "nope" in ` + e.config + " (its rules: api, route, open, login, plan, byheader, bypart, flat)"},
		{with("block", "--rule", "login", "eve"), exitError, `ratelimitctl: rule login: key part 0 (client_ip): "eve" is not an IP address or network`},
		{with("list", "--rule", "nope"), exitError, `--rule: no rule "nope"`},
		{with("show", "--rule", "route", "alice"), exitError, "rule route: its key has 2 part(s) (header x-user, path): give as many PART arguments, not 1"},
		{with("block", "--rule", "open", "alice"), exitError, "--rule: rule open has manual_block: false"},
		{with("tier", "set", "--rule", "plan", "--tier", "platinum", "alice"), exitError, `--tier "platinum": rule plan's tiers are free, gold`},
		{with("tier", "set", "--rule", "flat", "--tier", "gold", "alice"), exitError, "--rule: rule flat has no tiers"},
		{with("tier", "set", "--rule", "byheader", "--tier", "pro", "alice"), exitError, "--rule: rule byheader takes its tier from a request header"},
		{with("override", "set", "--rule", "plan", "--limits", "[{", "alice"), exitError, "--limits: limits: not valid JSON at line 1, column 3: unexpected end of input: expected an object key (a string)"},
		{with("override", "set", "--rule", "plan", "--limits", `[{"algorithm":"funnel","capacity":2,"rate":1,"period":"1h"}]`, "alice"),
			exitError, "--limits: limits[0]: must be a sliding_log"},
		{with("override", "set", "--rule", "flat", "--limits", gold, "alice"), exitError, "--rule: rule flat does not take overrides"},
		{with("show", "--rule", "flat", "--tier", "gold", "alice"), exitError, "--tier: rule flat has no tiers"},
		{with("show", "--rule", "byheader", "--tier", "gold", "alice"), exitError, `--tier "gold": rule byheader's tiers are free, pro`},
		{with("show", "--rule", "bypart", "--tier", "pro", "alice", "pro"), exitError, "--tier: rule bypart takes its tier from its key's part 2: the PART names it"},
		{with("show", "--rule", "plan", "--tier", "gold", "alice"), exitError, "--tier: rule plan takes its tier from Redis (tier set assigns it)"},
	} {
		var out, errOut bytes.Buffer
		code := run(tc.args, &out, &errOut)
		if code != tc.code || !strings.Contains(errOut.String(), tc.want) || out.Len() != 0 {
			t.Errorf("ratelimitctl %s: exit %d, stderr %q, stdout %q; want exit %d, stderr with %q",
				strings.Join(tc.args, " "), code, errOut.String(), out.String(), tc.code, tc.want)
		}
	}
	if e.epoch() != 0 {
		t.Errorf("failed commands bumped the epoch to %d", e.epoch())
	}
}

// Help goes to stdout with status 0; flags go before or after the command,
// and among the parts.
func TestCommandLine(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help"}, {"--help"}, {"help", "tier", "set"}, {"show", "-h"}} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != exitOK || !strings.Contains(out.String(), "Usage: ratelimitctl") || errOut.Len() != 0 {
			t.Errorf("ratelimitctl %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, out.String(), errOut.String())
		}
	}

	e := newEnv(t, testRules)
	var out, errOut bytes.Buffer
	args := []string{"block", "alice", "--redis", server.Addr, "--rule", "api", "--config", e.config, "--json"}
	if code := run(args, &out, &errOut); code != exitOK || !e.exists(e.key("api", "alice")+":block") {
		t.Fatalf("flags after the part: exit %d, stderr %q", code, errOut.String())
	}
	// After --, a part may start with "-".
	out.Reset()
	args = []string{"--config", e.config, "--redis", server.Addr, "block", "--rule", "api", "--", "-dash"}
	if code := run(args, &out, &errOut); code != exitOK || !e.exists(e.key("api", "-dash")+":block") {
		t.Fatalf("a part after --: exit %d, stderr %q", code, errOut.String())
	}
}

// The password comes from --password, else $RATELIMITCTL_PASSWORD. Not
// parallel: it sets the environment.
func TestAuth(t *testing.T) {
	s := redistest.Start(t, "--requirepass", "secret")
	e := newEnvOn(t, s, redistest.Prefix(t), testRules)
	for _, tc := range []struct {
		env  string
		args []string
		want string // on stderr; "" for success
	}{
		{"", nil, "ratelimitctl: --redis " + s.Addr + ": NOAUTH"},
		{"", []string{"--password", "wrong"}, "ratelimitctl: --redis " + s.Addr + ": WRONGPASS"},
		{"secret", nil, ""},
		{"wrong", []string{"--password", "secret"}, ""},
		{"secret", []string{"--username", "default"}, ""},
	} {
		t.Setenv(passwordEnv, tc.env)
		_, errOut, code := e.ctl(append(tc.args, "list")...)
		if tc.want == "" && (code != exitOK || errOut != "") || tc.want != "" && (code != exitError || !strings.HasPrefix(errOut, tc.want)) {
			t.Errorf("$%s=%q, %q: exit %d, stderr %q; want %q", passwordEnv, tc.env, tc.args, code, errOut, tc.want)
		}
	}
}

// Without --redis, Redis's address comes from $RATELIMITCTL_REDIS; --redis
// wins over it; errors name where the address came from. Not parallel: it
// sets the environment.
func TestRedisFromEnv(t *testing.T) {
	s := redistest.Start(t) // its own server: a key there came through the variable
	e := writeConfig(t, redistest.Prefix(t), testRules)
	e.do = func(_ string, args ...any) (any, error) { return s.Do(args...) }
	closed := closedAddr(t)

	t.Setenv(redisEnv, s.Addr)
	if _, errOut, code := e.ctl("block", "--rule", "api", "alice"); code != exitOK || errOut != "" {
		t.Fatalf("$%s=%s alone: exit %d, stderr %q", redisEnv, s.Addr, code, errOut)
	}
	if !e.exists(e.key("api", "alice") + ":block") {
		t.Fatalf("$%s=%s: the block is not on that server", redisEnv, s.Addr)
	}

	t.Setenv(redisEnv, closed)
	if _, errOut, code := e.ctl("--redis", s.Addr, "block", "--rule", "api", "bob"); code != exitOK || errOut != "" {
		t.Fatalf("--redis with $%s set elsewhere: exit %d, stderr %q", redisEnv, code, errOut)
	}
	if !e.exists(e.key("api", "bob") + ":block") {
		t.Fatalf("--redis %s: the block is not on that server", s.Addr)
	}
	if _, errOut, code := e.ctl("list"); code != exitError || !strings.HasPrefix(errOut, "ratelimitctl: $"+redisEnv+" "+closed+": ") {
		t.Errorf("$%s=%s (nothing listening): exit %d, stderr %q", redisEnv, closed, code, errOut)
	}
	t.Setenv(redisEnv, "no-port")
	if _, errOut, code := e.ctl("list"); code != exitUsage || !strings.HasPrefix(errOut, `ratelimitctl list: $`+redisEnv+` "no-port": want host:port`) {
		t.Errorf("$%s=no-port: exit %d, stderr %q", redisEnv, code, errOut)
	}
}

// closedAddr is a local address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	return redistest.HoldPort(t).Addr()
}
