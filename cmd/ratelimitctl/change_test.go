package main

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
)

func TestBlock(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testRules)
	alice, bob := e.key("api", "alice"), e.key("api", "bob")
	epoch := e.epoch()

	out := e.ok("block", "--rule", "api", "--ttl", "1h", "alice")
	for _, want := range []string{
		"set    " + keyspace.BlockKey(alice) + " = 1, expires in 1h0m0s\n",
		"epoch  " + keyspace.EpochKey(e.prefix) + " = " + itoa(epoch+1) + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("block --ttl 1h: output lacks %q:\n%s", want, out)
		}
	}
	if v, ttl := e.get(keyspace.BlockKey(alice)), e.pttl(keyspace.BlockKey(alice)); v != "1" || ttl <= 3590_000 || ttl > 3600_000 {
		t.Errorf("block key %q with PTTL %d; want \"1\" for an hour", v, ttl)
	}
	if p := newProxy(t, e); p.send(t, [2]string{"x-user", "alice"}) != 429 || p.send(t, [2]string{"x-user", "bob"}) != 200 {
		t.Error("the filter does not deny alice alone after block")
	}

	// Without --ttl the block stays until unblock; --json says so.
	var c changed
	e.json(&c, "block", "--rule", "api", "bob")
	want := keyInfo{Key: keyspace.BlockKey(bob), Value: "1", TTLms: -1}
	if c.Command != "block" || c.Key != bob || c.Set == nil || *c.Set != want || c.Epoch != epoch+2 {
		t.Errorf("block --json: %+v (set %+v); want set %+v, epoch %d", c, c.Set, want, epoch+2)
	}
	if e.pttl(keyspace.BlockKey(bob)) != -1 || e.epoch() != epoch+2 {
		t.Errorf("block without --ttl: PTTL %d, epoch %d; want -1, %d", e.pttl(keyspace.BlockKey(bob)), e.epoch(), epoch+2)
	}

	// unblock deletes the key; a second one finds it absent, and still
	// bumps the epoch.
	e.json(&c, "unblock", "--rule", "api", "bob")
	if !slices.Equal(c.Deleted, []string{keyspace.BlockKey(bob)}) || len(c.Absent) != 0 || c.Epoch != epoch+3 {
		t.Errorf("unblock: %+v", c)
	}
	out = e.ok("unblock", "--rule", "api", "bob")
	if !strings.Contains(out, "absent  "+keyspace.BlockKey(bob)+"\n") || e.exists(keyspace.BlockKey(bob)) || e.epoch() != epoch+4 {
		t.Errorf("second unblock: epoch %d, output:\n%s", e.epoch(), out)
	}
	if p := newProxy(t, e); p.send(t, [2]string{"x-user", "bob"}) != 200 {
		t.Error("the filter denies bob after unblock")
	}
}

func TestReset(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testRules)
	p := newProxy(t, e)
	alice := e.key("api", "alice")
	for i := range 4 {
		if got, want := p.send(t, [2]string{"x-user", "alice"}), []int{200, 200, 200, 429}[i]; got != want {
			t.Fatalf("request %d: status %d, want %d", i+1, got, want)
		}
	}
	state := []string{keyspace.StateKey(alice, 0), keyspace.StateKey(alice, 1)}
	others := []string{keyspace.BlockKey(alice), keyspace.TierKey(alice), keyspace.OverrideKey(alice)}
	for _, k := range others {
		e.set(k, "x")
	}
	epoch := e.epoch()

	out := e.ok("reset", "--rule", "api", "alice")
	for _, want := range []string{"deleted  " + state[0] + "\n", "deleted  " + state[1] + "\n",
		"kept     " + others[0] + " (reset --all deletes it)\n", "kept     " + others[2] + " (reset --all deletes it)\n",
		"epoch    " + keyspace.EpochKey(e.prefix) + " = " + itoa(epoch+1) + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("reset: output lacks %q:\n%s", want, out)
		}
	}
	for _, k := range state {
		if e.exists(k) {
			t.Errorf("reset left %s", k)
		}
	}
	for _, k := range others {
		if !e.exists(k) {
			t.Errorf("reset deleted %s", k)
		}
	}

	var c changed
	e.json(&c, "reset", "--all", "--rule", "api", "alice")
	if !slices.Equal(c.Deleted, others) || !slices.Equal(c.Absent, state) || c.Kept != nil || c.Epoch != epoch+2 {
		t.Errorf("reset --all: %+v; want deleted %q, absent %q, epoch %d", c, others, state, epoch+2)
	}

	// The filter starts afresh (a new proxy: the old one remembers the
	// denial until it polls the epoch).
	p = newProxy(t, e)
	for i := range 3 {
		if got := p.send(t, [2]string{"x-user", "alice"}); got != 200 {
			t.Fatalf("request %d after reset: status %d", i+1, got)
		}
	}

	// A part the request lacked under on_missing_key: shared is "".
	p.send(t) // no x-user: route's shared key
	shared := keyspace.StateKey(e.key("route", "", "/"), 0)
	if !e.exists(shared) {
		t.Fatalf("no %s after a request without x-user", shared)
	}
	e.json(&c, "reset", "--rule", "route", "", "/")
	if !slices.Equal(c.Deleted, []string{shared}) {
		t.Errorf("reset of the shared key: %+v", c)
	}
}

// PARTs are normalized as the filter normalizes a request's values: here
// a client address grouped by its /24.
func TestPartsNormalized(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testRules)
	var c changed
	for _, addr := range []string{"203.0.113.7", "203.0.113.0/24", "203.0.113.128/25", "::ffff:203.0.113.9"} {
		e.json(&c, "block", "--rule", "login", addr)
		if want := e.prefix + "{login|203.0.113.0/24}"; c.Key != want {
			t.Errorf("block %s: key %s, want %s", addr, c.Key, want)
		}
	}
	p := newProxy(t, e)
	if p.sendFrom(t, "203.0.113.200:5000", "/login") != 429 || p.sendFrom(t, "203.0.114.1:5000", "/login") != 200 {
		t.Error("the filter does not deny 203.0.113.0/24 alone")
	}
	_, errOut, code := e.ctl("block", "--rule", "login", "203.0.0.0/16")
	if code != exitError || !strings.Contains(errOut, `"203.0.0.0/16" is a network wider than the rule's /24`) {
		t.Errorf("a network wider than the rule's: exit %d, %q", code, errOut)
	}
}

// Every change bumps the epoch once, after it, and reports the new value.
func TestEveryChangeBumpsTheEpoch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, tierRules)
	for _, args := range [][]string{
		{"block", "--rule", "plan", "alice"},
		{"unblock", "--rule", "plan", "alice"},
		{"tier", "set", "--rule", "plan", "--tier", "gold", "alice"},
		{"tier", "clear", "--rule", "plan", "alice"},
		{"override", "set", "--rule", "plan", "--limits", `[{"algorithm":"sliding_log","limit":50,"window":"1m"}]`, "alice"},
		{"override", "clear", "--rule", "plan", "alice"},
		{"reset", "--rule", "plan", "alice"},
		{"reset", "--all", "--rule", "plan", "alice"},
	} {
		before := e.epoch()
		var c changed
		e.json(&c, args...)
		if after := e.epoch(); after != before+1 || c.Epoch != after || c.EpochKey != keyspace.EpochKey(e.prefix) {
			t.Errorf("%s: epoch %d -> %d, reported %s = %d", strings.Join(args, " "), before, after, c.EpochKey, c.Epoch)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
