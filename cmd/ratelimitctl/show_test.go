package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms/lua"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// checkLimits compares show's limits with want, name, algorithm, limit and
// used; remaining must be limit - used.
func checkLimits(t *testing.T, what string, got []limitShown, want ...limitShown) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: limits %+v, want %+v", what, got, want)
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.Name || g.Algorithm != w.Algorithm || g.Limit != w.Limit || g.Used != w.Used || g.Remaining != w.Limit-w.Used {
			t.Errorf("%s: limit %d is %+v; want %s %s limit %d used %d remaining %d",
				what, i, g, w.Name, w.Algorithm, w.Limit, w.Used, w.Limit-w.Used)
		}
	}
}

// show reports what the filter's requests used, and charges nothing.
func TestShow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testRules)
	p := newProxy(t, e)
	alice := [2]string{"x-user", "alice"}
	minute := func(used int64) limitShown {
		return limitShown{Name: "minute", Algorithm: "sliding_log", Limit: 3, Used: used}
	}
	burst := func(used int64) limitShown {
		return limitShown{Name: "burst", Algorithm: "funnel", Limit: 5, Used: used}
	}

	var sh shown
	e.json(&sh, "show", "--rule", "api", "alice")
	checkLimits(t, "before any request", sh.Limits, minute(0), burst(0))
	for n := int64(1); n <= 3; n++ {
		if status := p.send(t, alice); status != 200 {
			t.Fatalf("request %d: status %d", n, status)
		}
		for range 2 { // twice: the first charged nothing
			e.json(&sh, "show", "--rule", "api", "alice")
			checkLimits(t, fmt.Sprintf("after %d requests", n), sh.Limits, minute(n), burst(n))
		}
	}
	if !sh.Denied || sh.Blocked || sh.Limits[0].RetryAfterMs <= 0 || sh.Limits[0].RetryAfterMs > 60_000 || sh.Limits[1].RetryAfterMs != -1 {
		t.Errorf("after 3 requests of 3 a minute: %+v", sh)
	}
	if sh.Key != e.key("api", "alice") || sh.Rule != "api" || sh.Block != nil || sh.Tier != "" || sh.OverrideApplied {
		t.Errorf("show: %+v", sh)
	}
	columns := regexp.MustCompile(`  +`)
	out := columns.ReplaceAllString(e.ok("show", "--rule", "api", "alice"), "|")
	for _, want := range []string{
		"rule|api\nkey|" + e.key("api", "alice") + "\nblock|none\nnow|denied by minute, retry after ",
		"\nlimits|the rule's\n\nLIMIT|ALGORITHM|LIMIT|USED|REMAINING|RESET|RETRY AFTER\nminute|sliding_log|3|3|0|",
		"\nburst|funnel|5|3|2|",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show: output lacks %q:\n%s", want, out)
		}
	}
	if status := p.send(t, alice); status != 429 {
		t.Errorf("the fourth request: status %d; show charged something", status)
	}

	e.ok("block", "--rule", "api", "alice")
	e.json(&sh, "show", "--rule", "api", "alice")
	if !sh.Blocked || !sh.Denied || sh.Block == nil || sh.Block.TTLms != -1 || len(sh.Limits) != 0 {
		t.Errorf("show of a blocked key: %+v", sh)
	}
	if out := e.ok("show", "--rule", "api", "alice"); !strings.Contains(out, "block  blocked, no expiry: until `ratelimitctl unblock`\nnow    denied: blocked") {
		t.Errorf("show of a blocked key:\n%s", out)
	}

	// A rule with manual_block: false ignores its block key.
	e.set(keyspace.BlockKey(e.key("open", "alice")), "1")
	e.json(&sh, "show", "--rule", "open", "alice")
	if sh.Blocked || sh.Denied || sh.Block == nil {
		t.Errorf("show of a rule without manual blocks: %+v", sh)
	}
	if out := e.ok("show", "--rule", "open", "alice"); !strings.Contains(out, "(ignored: the rule has manual_block: false)") {
		t.Errorf("show of a rule without manual blocks:\n%s", out)
	}
}

// show follows tiers from Redis and from a header, and overrides.
func TestShowTiers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, tierRules)
	p := newProxy(t, e)
	bob := [2]string{"x-user", "bob"}
	if status := p.send(t, bob); status != 200 {
		t.Fatalf("status %d", status)
	}

	var sh shown
	e.json(&sh, "show", "--rule", "plan", "bob")
	if sh.Tier != "free" || sh.AssignedTier != nil || sh.OverrideApplied {
		t.Errorf("no tier assigned: %+v", sh)
	}
	checkLimits(t, "free", sh.Limits, limitShown{Name: "minute", Algorithm: "sliding_log", Limit: 2, Used: 1})

	// gold's limit 0 shares the state free's counted.
	e.ok("tier", "set", "--rule", "plan", "--tier", "gold", "--ttl", "1h", "bob")
	e.json(&sh, "show", "--rule", "plan", "bob")
	if sh.Tier != "gold" || sh.AssignedTier == nil || sh.AssignedTier.Value != "gold" || sh.AssignedTier.TTLms <= 3590_000 {
		t.Errorf("gold assigned: %+v (assigned %+v)", sh, sh.AssignedTier)
	}
	checkLimits(t, "gold", sh.Limits, limitShown{Name: "minute", Algorithm: "sliding_log", Limit: 5, Used: 1},
		limitShown{Name: "hour", Algorithm: "funnel", Limit: 100, Used: 0})
	if out := e.ok("show", "--rule", "plan", "bob"); !strings.Contains(out, "tier      gold (assigned in Redis: gold, expires in ") ||
		!strings.Contains(out, "limits    tier gold's\n") {
		t.Errorf("show with a tier:\n%s", out)
	}

	e.ok("override", "set", "--rule", "plan", "--limits", `[{"name":"mine","algorithm":"sliding_log","limit":50,"window":"1m"}]`, "bob")
	e.json(&sh, "show", "--rule", "plan", "bob")
	if !sh.OverrideApplied || sh.Override == nil || sh.Override.TTLms != -1 {
		t.Errorf("override set: %+v", sh)
	}
	// An override's limits are named by position, <rule>.override.<i>:
	// the override key holds no names.
	checkLimits(t, "override", sh.Limits, limitShown{Name: "plan.override.0", Algorithm: "sliding_log", Limit: 50, Used: 1})
	if out := e.ok("show", "--rule", "plan", "bob"); !strings.Contains(out, "limits    the override's\n") {
		t.Errorf("show with an override:\n%s", out)
	}

	// Tiers from a header: --tier is what the request would name.
	for range 2 {
		p.send(t, [2]string{"x-user", "carol"}, [2]string{"x-plan", "pro"})
	}
	e.json(&sh, "show", "--rule", "byheader", "--tier", "pro", "carol")
	if sh.Tier != "pro" {
		t.Errorf("--tier pro: tier %q", sh.Tier)
	}
	checkLimits(t, "pro", sh.Limits, limitShown{Name: "minute", Algorithm: "sliding_log", Limit: 4, Used: 2})
	e.json(&sh, "show", "--rule", "byheader", "carol")
	if sh.Tier != "free" || !sh.Denied {
		t.Errorf("the default tier, free, 1 a minute, after 2 requests: %+v", sh)
	}

	// Tiers from a key part: the PART names it.
	for range 2 {
		p.send(t, [2]string{"x-user", "dave"}, [2]string{"x-plan", "pro"})
	}
	e.json(&sh, "show", "--rule", "bypart", "dave", "pro")
	if sh.Tier != "pro" {
		t.Errorf("bypart dave pro: tier %q", sh.Tier)
	}
	checkLimits(t, "bypart pro", sh.Limits, limitShown{Name: "minute", Algorithm: "sliding_log", Limit: 4, Used: 2})
	e.json(&sh, "show", "--rule", "bypart", "dave", "platinum")
	if sh.Tier != "free" || len(sh.Limits) != 1 || sh.Limits[0].Used != 0 {
		t.Errorf("bypart dave platinum (an unknown tier: the default, another key): %+v", sh)
	}
}

// show calls the library's peek function: without the library it fails
// saying to install it, and works once install has loaded it.
func TestShowNeedsTheLibrary(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	e := newEnvOn(t, s, redistest.Prefix(t), testRules)
	if _, err := s.Do("FUNCTION", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := e.ctl("show", "--rule", "api", "alice")
	if want := "ERR Function not found: the library " + lua.Library.Name + " is not loaded; run `ratelimitctl install`"; code != exitError || !strings.Contains(errOut, want) {
		t.Fatalf("show without the library: exit %d, %q; want 1 and %q", code, errOut, want)
	}
	if out := e.ok("install"); !strings.Contains(out, lua.Library.Name+"  installed") {
		t.Errorf("install: %q", out)
	}
	var sh shown
	e.json(&sh, "show", "--rule", "api", "alice")
	checkLimits(t, "a fresh key", sh.Limits, limitShown{Name: "minute", Algorithm: "sliding_log", Limit: 3},
		limitShown{Name: "burst", Algorithm: "funnel", Limit: 5})
	if calls, _, err := s.CommandStat("eval"); err != nil || calls != 0 {
		t.Errorf("EVAL called %d times (%v); want never", calls, err)
	}
}

// A blocked key of a rule whose limits Redis picks (tiers from Redis,
// overrides), alone in its call: the script's blocked reply is three
// integers, however few plain checks the call has.
func TestShowBlockedChosenKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, tierRules)
	e.ok("block", "--rule", "plan", "--ttl", "1h", "alice")
	var sh shown
	out, errOut, code := e.ctl("show", "--rule", "plan", "alice", "--json")
	if code != exitOK {
		t.Fatalf("show of a blocked key of rule plan: exit %d, %s(algorithms.Decision.FromIntsCall cuts a blocked reply "+
			"to 2+5n integers, 2 when the call has no plain check, so the filter too fails such a call)", code, errOut)
	}
	if err := json.Unmarshal([]byte(out), &sh); err != nil || !sh.Blocked || sh.Block == nil || len(sh.Limits) != 0 {
		t.Errorf("show of a blocked key of rule plan: %+v (%v)", sh, err)
	}
}

// With redis.command evalsha in the configuration, show calls as the
// filter then does: EVALSHA, and EVAL once after SCRIPT FLUSH, with no
// library.
func TestShowWithEvalSHA(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	prefix := redistest.Prefix(t)
	if _, err := s.Do("FUNCTION", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Do("SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	data := fmt.Sprintf(`{"redis":{"cluster":"redis","key_prefix":%q,"command":"evalsha"},"rules":%s}`, prefix, testRules)
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, s, prefix, testRules)
	e.config = path
	for range 2 {
		var sh shown
		e.json(&sh, "show", "--rule", "api", "alice")
		checkLimits(t, "a fresh key", sh.Limits, limitShown{Name: "minute", Algorithm: "sliding_log", Limit: 3},
			limitShown{Name: "burst", Algorithm: "funnel", Limit: 5})
	}
	evals, _, _ := s.CommandStat("eval")
	shas, _, _ := s.CommandStat("evalsha")
	if evals != 1 || shas != 2 {
		t.Errorf("EVAL %d and EVALSHA %d times; want 1 and 2", evals, shas)
	}
}
