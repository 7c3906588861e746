package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
)

// tierRules:
//   - plan: tiers from Redis (free: 2 a minute; gold: 5 a minute and a
//     funnel), and overrides.
//   - byheader: tiers from a header (free: 1 a minute; pro: 4).
//   - bypart: the same, from the second part of its key.
//   - flat: neither.
const tierRules = `[
	{"name":"plan","key":[{"source":"header","name":"x-user"}],"overrides":true,
	 "tiers":{"from":"redis","default":"free","limits":{
	   "free":[{"name":"minute","algorithm":"sliding_log","limit":2,"window":"1m"}],
	   "gold":[{"name":"minute","algorithm":"sliding_log","limit":5,"window":"1m"},
	           {"name":"hour","algorithm":"funnel","capacity":100,"rate":100,"period":"1h"}]}}},
	{"name":"byheader","key":[{"source":"header","name":"x-user"}],
	 "tiers":{"from":{"header":"x-plan"},"default":"free","limits":{
	   "free":[{"name":"minute","algorithm":"sliding_log","limit":1,"window":"1m"}],
	   "pro":[{"name":"minute","algorithm":"sliding_log","limit":4,"window":"1m"}]}}},
	{"name":"bypart","key":[{"source":"header","name":"x-user"},{"source":"header","name":"x-plan"}],
	 "tiers":{"from":{"key_part":1},"default":"free","limits":{
	   "free":[{"name":"minute","algorithm":"sliding_log","limit":1,"window":"1m"}],
	   "pro":[{"name":"minute","algorithm":"sliding_log","limit":4,"window":"1m"}]}}},
	{"name":"flat","key":[{"source":"header","name":"x-user"}],
	 "limits":[{"algorithm":"funnel","capacity":2,"rate":1,"period":"1h"}]}]`

func TestTier(t *testing.T) {
	t.Parallel()
	e := newEnv(t, tierRules)
	alice, bob := e.key("plan", "alice"), e.key("plan", "bob")

	out := e.ok("tier", "set", "--rule", "plan", "--tier", "gold", "--ttl", "720h", "alice")
	if want := "set    " + keyspace.TierKey(alice) + " = gold, expires in 720h0m0s\n"; !strings.HasPrefix(out, want) {
		t.Errorf("tier set:\n%s\nwant it to start %q", out, want)
	}
	if v, ttl := e.get(keyspace.TierKey(alice)), e.pttl(keyspace.TierKey(alice)); v != "gold" || ttl < 719*3600_000 {
		t.Errorf("tier key %q, PTTL %d", v, ttl)
	}
	var c changed
	e.json(&c, "tier", "set", "--rule", "plan", "--tier", "free", "bob")
	if want := (keyInfo{Key: keyspace.TierKey(bob), Value: "free", TTLms: -1}); c.Set == nil || *c.Set != want {
		t.Errorf("tier set --json: set %+v, want %+v", c.Set, want)
	}
	e.json(&c, "tier", "clear", "--rule", "plan", "bob")
	if !slices.Equal(c.Deleted, []string{keyspace.TierKey(bob)}) || e.exists(keyspace.TierKey(bob)) {
		t.Errorf("tier clear: %+v", c)
	}

	// reset clears every position of every tier: gold has two limits.
	e.set(keyspace.StateKey(alice, 0), "1")
	e.set(keyspace.StateKey(alice, 1), "1")
	e.json(&c, "reset", "--rule", "plan", "alice")
	if !slices.Equal(c.Deleted, []string{keyspace.StateKey(alice, 0), keyspace.StateKey(alice, 1)}) ||
		!slices.Equal(c.Kept, []string{keyspace.TierKey(alice)}) {
		t.Errorf("reset of a tiered key: %+v", c)
	}
}

func TestOverride(t *testing.T) {
	t.Parallel()
	e := newEnv(t, tierRules)
	alice := e.key("plan", "alice")
	limits := `[{"name":"minute","algorithm":"sliding_log","limit":50,"window":"1m"}]`
	rule, _ := e.cfg.Rule("plan")
	value, err := config.ParseOverride(rule, []byte(limits))
	if err != nil {
		t.Fatal(err)
	}

	var c changed
	e.json(&c, "override", "set", "--rule", "plan", "--limits", limits, "--ttl", "90s", "alice")
	if want := (keyInfo{Key: keyspace.OverrideKey(alice), Value: value, TTLms: 90_000}); c.Set == nil || *c.Set != want {
		t.Errorf("override set: set %+v, want %+v", c.Set, want)
	}
	if v, ttl := e.get(keyspace.OverrideKey(alice)), e.pttl(keyspace.OverrideKey(alice)); v != value || ttl <= 80_000 || ttl > 90_000 {
		t.Errorf("override key %q, PTTL %d; want %q for 90s", v, ttl, value)
	}
	out := e.ok("override", "clear", "--rule", "plan", "alice")
	if !strings.Contains(out, "deleted  "+keyspace.OverrideKey(alice)+"\n") || e.exists(keyspace.OverrideKey(alice)) {
		t.Errorf("override clear:\n%s", out)
	}
}

// An override prints as the limits it was given, not as its encoding in
// Redis: override set as the operator wrote them, show as an equivalent
// JSON array that override set takes back to the same value. Without
// --ttl, each change says that it does not expire, and until what.
func TestOverrideShownAsSet(t *testing.T) {
	t.Parallel()
	e := newEnv(t, tierRules)
	alice := e.key("plan", "alice")
	limits := `[{"algorithm": "sliding_log", "limit": 50, "window": "1m"},
		{"algorithm": "funnel", "capacity": 10, "rate": 10, "period": "1h"}]`
	out := e.ok("override", "set", "--rule", "plan", "--limits", limits, "alice")
	want := "set    " + keyspace.OverrideKey(alice) + ` = [{"algorithm":"sliding_log","limit":50,"window":"1m"},` +
		`{"algorithm":"funnel","capacity":10,"rate":10,"period":"1h"}], no expiry: until ` + "`ratelimitctl override clear`\n"
	if !strings.HasPrefix(out, want) {
		t.Errorf("override set:\n%s\nwant it to start\n%s", out, want)
	}

	equivalent := `[{"algorithm":"sliding_log","limit":50,"window":"1m"},{"algorithm":"funnel","capacity":10,"rate":1,"period":"6m"}]`
	if out := e.ok("show", "--rule", "plan", "alice"); !strings.Contains(out, "override  "+equivalent+", no expiry: until `ratelimitctl override clear`\n") {
		t.Errorf("show:\n%s\nwant the override as %s", out, equivalent)
	}
	var sh shown
	e.json(&sh, "show", "--rule", "plan", "alice")
	rule, _ := e.cfg.Rule("plan")
	if v, err := config.ParseOverride(rule, sh.OverrideLimits); err != nil || sh.Override == nil || v != sh.Override.Value {
		t.Errorf("show --json: override_limits %s reads back as %q, %v; the override holds %+v", sh.OverrideLimits, v, err, sh.Override)
	}

	for _, tc := range []struct{ args, want string }{
		{"tier set --rule plan --tier gold alice", keyspace.TierKey(alice) + " = gold, no expiry: until `ratelimitctl tier clear`"},
		{"block --rule plan alice", keyspace.BlockKey(alice) + " = 1, no expiry: until `ratelimitctl unblock`"},
		{"block --rule plan --ttl 2d alice", keyspace.BlockKey(alice) + " = 1, expires in 48h0m0s"},
	} {
		if out := e.ok(strings.Fields(tc.args)...); !strings.HasPrefix(out, "set    "+tc.want+"\n") {
			t.Errorf("%s:\n%s\nwant it to start with set %s", tc.args, out, tc.want)
		}
	}
	for _, cmd := range [][]string{{"block"}, {"tier", "set"}, {"override", "set"}} {
		out := e.ok(append([]string{"help"}, cmd...)...)
		if !strings.Contains(out, "7d or 2w (default: no expiry, until ") {
			t.Errorf("help %s: --ttl's help lacks the day and week units or the default:\n%s", strings.Join(cmd, " "), out)
		}
	}
}
