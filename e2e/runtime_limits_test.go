package e2e

// Run-time limits (issue 13), end to end: ratelimitctl, run as an operator
// types it on the configuration file the filter loads, against the filter
// in the host, through both modules. This file: the command and the filter
// name the same keys, and a change reaches every VM's deny cache within
// the epoch's bound. runtime_tiers_test.go: tiers and overrides.

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// agreeRules: rule enc keys on one header, a request without it sharing
// one key; rule multi on a header, a query parameter and the method.
const agreeRules = `[
	{"name":"enc","match":{"path_prefix":"/e/"},"key":[{"source":"header","name":"x-k"}],"on_missing_key":"shared",
	 "limits":[{"algorithm":"sliding_log","limit":10,"window":"1h"}]},
	{"name":"multi","match":{"path_prefix":"/m/"},
	 "key":[{"source":"header","name":"x-k"},{"source":"query","name":"org"},{"source":"method"}],
	 "limits":[{"algorithm":"sliding_log","limit":10,"window":"1h"}]}]`

// sentKey is one key the test sends requests on: its rule, its parts'
// values as the requests carry them, how many were sent, the last answer.
type sentKey struct {
	rule  string
	parts []string
	n     int
	last  outcome
	key   string // as list named it
}

func (k *sentKey) request(i int) map[string]string {
	if k.rule == "enc" {
		req := map[string]string{":path": "/e/x"}
		if k.parts[0] != "" || i%2 == 1 { // "": the header absent, or empty every other time
			req["x-k"] = k.parts[0]
		}
		return req
	}
	return map[string]string{":path": "/m/x?org=" + url.QueryEscape(k.parts[1]), ":method": k.parts[2], "x-k": k.parts[0]}
}

// The keys the filter writes for requests whose key parts need encoding
// (spaces, | { } : %, unicode, a value long enough to be hashed, a missing
// part shared, several parts) are the keys "list" finds, with the values
// sent; "show", given those values, names the same keys and reports what
// the requests used and the last response's RateLimit header.
func TestCtlAndFilterAgreeOnKeys(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("0123456789", 20) // 200 bytes: hashed
	for _, kind := range moduleKinds {
		t.Run(kind, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			cfg, config := hostConfig(t, kind, wasmhost.Config{}, fmt.Sprintf(
				`{"redis":{"cluster":"redis","timeout":"2s","key_prefix":%q},"rules":%s}`, prefix, agreeRules), server.Addr)
			tg := startHost(t, cfg)
			c := newCtl(t, config, "--redis", server.Addr)
			keys := []*sentKey{
				{rule: "enc", parts: []string{"alice smith"}, n: 1},
				{rule: "enc", parts: []string{"a|b{c}d:e%f"}, n: 2},
				{rule: "enc", parts: []string{"héllo wörld ✓"}, n: 3},
				{rule: "enc", parts: []string{long}, n: 4},
				{rule: "enc", parts: []string{""}, n: 5},
				{rule: "multi", parts: []string{"bob", "acme corp|1", "GET"}, n: 2},
				{rule: "multi", parts: []string{"bob", "acme corp|1", "POST"}, n: 1},
				{rule: "multi", parts: []string{"ünï", "a/b:c?&=d", "GET"}, n: 3},
			}
			for _, k := range keys {
				for i := range k.n {
					k.last = tg.send(t, k.request(i))
					expect(t, k.last, 200)
				}
			}
			for _, rule := range []string{"enc", "multi"} {
				var want []*sentKey
				for _, k := range keys {
					if k.rule == rule {
						want = append(want, k)
					}
				}
				checkList(t, c, prefix, rule, want, long)
				for _, k := range want {
					var s ctlShown
					c.json(&s, append([]string{"show", "--rule", rule, "--"}, k.parts...)...)
					if s.Key != k.key || len(s.Limits) != 1 || s.Limits[0].Used != int64(k.n) || s.Limits[0].Remaining != remainingOf(t, k.last) {
						t.Errorf("show %s %q: %+v; want key %s, used %d, remaining %d (RateLimit %q)",
							rule, k.parts, s, k.key, k.n, remainingOf(t, k.last), k.last.headers["ratelimit"])
					}
				}
			}
		})
	}
}

// checkList checks that "list --rule" finds exactly the Redis keys of the
// rule that SCAN finds, one listed key per key sent, with its parts
// decoded to the values sent (hashed for the value long), and records
// each key's name in want.
func checkList(t *testing.T, c *ctl, prefix, rule string, want []*sentKey, long string) {
	t.Helper()
	var l ctlListed
	c.json(&l, "list", "--rule", rule)
	scanned := scanKeys(t, prefix+"{"+rule+"|*")
	listed := map[string]bool{}
	for _, lk := range l.Keys {
		for _, k := range lk.RedisKeys {
			listed[k] = true
		}
	}
	if l.Cursor != "0" || !maps.Equal(scanned, listed) {
		t.Fatalf("list --rule %s: cursor %s, Redis keys %v; SCAN finds %v", rule, l.Cursor,
			slices.Sorted(maps.Keys(listed)), slices.Sorted(maps.Keys(scanned)))
	}
	if len(l.Keys) != len(want) {
		t.Fatalf("list --rule %s: %d keys, want %d: %+v", rule, len(l.Keys), len(want), l.Keys)
	}
	for _, lk := range l.Keys {
		var match *sentKey
		for _, k := range want {
			if len(lk.Parts) != len(k.parts) {
				continue
			}
			same := true
			for i, p := range lk.Parts {
				if k.parts[i] == long {
					same = same && p.Hashed && len(p.Value) == 23 && strings.HasPrefix(p.Value, "#")
				} else {
					same = same && !p.Hashed && p.Value == k.parts[i]
				}
			}
			if same {
				match = k
			}
		}
		if match == nil || match.key != "" || lk.Rule != rule || !slices.Equal(lk.State, []int{0}) || lk.Tier || lk.Override {
			t.Fatalf("list --rule %s: key %+v is none of those sent, or listed twice, or not one limit's state", rule, lk)
		}
		match.key = lk.Key
	}
}

// epochConfig: per user, tiers an operator assigns (free: 2 an hour; pro:
// 100) and overrides.
const epochConfig = `{"redis":{"cluster":"redis","timeout":"2s","key_prefix":%q},"rules":[
	{"name":"acct","key":[{"source":"header","name":"x-user"}],"overrides":true,
	 "tiers":{"from":"redis","default":"free","limits":{
	   "free":[{"algorithm":"sliding_log","limit":2,"window":"1h"}],
	   "pro":[{"algorithm":"sliding_log","limit":100,"window":"1h"}]}}}]}`

const (
	pollsMetric = "ratelimit.epoch.polls"
	hitsMetric  = "ratelimit.deny_cache.hits"
)

// A change made with ratelimitctl (unblock, reset, tier set, override set)
// reaches two VMs whose deny caches hold the key's denial, with no
// redeploy: each admits the key's next request before its epoch polls
// have grown by 3 (the bound in ticks: one tick and one round trip). Over
// the test, a VM polls at most once per second of Redis's clock, plus one.
func TestCtlChangesReachEveryVM(t *testing.T) {
	t.Parallel()
	for _, kind := range moduleKinds {
		t.Run(kind, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			began := redisTime(t, server.Do)
			vms, config := startVMs(t, kind, fmt.Sprintf(epochConfig, prefix), 2)
			c := newCtl(t, config, "--redis", server.Addr)
			steps := []struct {
				name, user    string
				setup, change []string
				policy        string // of the admitted requests
			}{
				{"unblock", "blocked", []string{"block", "--rule", "acct", "--ttl", "1h", "--", "blocked"},
					[]string{"unblock", "--rule", "acct", "--", "blocked"}, `"acct.free";q=2;w=3600`},
				{"reset", "spent", nil, []string{"reset", "--rule", "acct", "--", "spent"}, `"acct.free";q=2;w=3600`},
				{"tier set", "upgraded", nil, []string{"tier", "set", "--rule", "acct", "--tier", "pro", "--", "upgraded"},
					`"acct.pro";q=100;w=3600`},
				{"override set", "special", nil, []string{"override", "set", "--rule", "acct",
					"--limits", `[{"algorithm":"sliding_log","limit":50,"window":"1h"}]`, "--", "special"}, `"acct.override";q=50;w=3600`},
			}
			for i, st := range steps {
				req := map[string]string{":path": "/", "x-user": st.user}
				if st.setup != nil {
					c.run(st.setup...)
				}
				if i == 0 {
					// The block's own epoch bump, and each VM's first read
					// of the epoch, clear the caches: wait them out.
					primeSettled(t, vms, req)
				} else {
					// Each VM admitted the previous step's key after its
					// cache was cleared, so it has seen every change.
					primeDenied(t, vms, req)
				}
				for i, o := range changeReaches(t, st.name, vms, req, func() { c.run(st.change...) }) {
					if got := o.headers["ratelimit-policy"]; got != st.policy {
						t.Errorf("%s: vm %d admitted with RateLimit-Policy %q, want %q", st.name, i, got, st.policy)
					}
				}
			}
			elapsed := redisTime(t, server.Do).Sub(began)
			for i, vm := range vms {
				polls := vm.metric(pollsMetric)
				t.Logf("vm %d: %d epoch polls, %d changes seen, in %v of Redis's clock", i, polls,
					vm.metric("ratelimit.epoch.changes"), elapsed.Round(time.Millisecond))
				if float64(polls) > elapsed.Seconds()+1 {
					t.Errorf("vm %d: %d epoch polls in %v: more than one per second, plus one", i, polls, elapsed)
				}
			}
		})
	}
}

// primeDenied puts req's denial in every VM's deny cache: each VM is sent
// req until its cache answers (deny_cache.hits grows). Requests may be
// admitted until the first denial, never after it.
func primeDenied(t *testing.T, vms []*wasmTarget, req map[string]string) {
	t.Helper()
	for i, vm := range vms {
		denied := false
		waitFor(t, fmt.Sprintf("vm %d to answer %v from its deny cache", i, req), func() bool {
			hits := vm.metric(hitsMetric)
			o := vm.send(t, req)
			switch {
			case o.status == 429:
				denied = true
			case o.status != 200 || denied:
				t.Fatalf("vm %d, %v: %+v, after a denial", i, req, o)
			}
			return o.status == 429 && vm.metric(hitsMetric) > hits
		})
	}
}

// primeSettled primes, and goes on until every VM has polled the epoch
// twice since: a poll starts only once the one before has answered, so
// each VM has then read the epoch after every change made before, and
// holds the denial.
func primeSettled(t *testing.T, vms []*wasmTarget, req map[string]string) {
	t.Helper()
	primeDenied(t, vms, req)
	from := make([]int64, len(vms))
	for i, vm := range vms {
		from[i] = vm.metric(pollsMetric)
	}
	waitFor(t, "two epoch polls in every VM", func() bool {
		primeDenied(t, vms, req) // again: a poll that saw a change cleared it
		for i, vm := range vms {
			if vm.metric(pollsMetric) < from[i]+2 {
				return false
			}
		}
		return true
	})
	primeDenied(t, vms, req)
}

// changeReaches makes a change while req's key is denied in every VM's
// deny cache, then sends req to each VM in turn until each has admitted
// it, and returns the admitted outcomes. The bound is asserted in each
// VM's ticks, not by the wall clock: a VM may deny only while its epoch
// polls have grown by at most 2 since the change began. The first may
// have read the epoch before the change; the second starts after the
// first answered, reads it after the change, and its answer clears the
// cache. The wall time each VM took is logged.
func changeReaches(t *testing.T, name string, vms []*wasmTarget, req map[string]string, change func()) []outcome {
	t.Helper()
	from := make([]int64, len(vms))
	for i, vm := range vms {
		from[i] = vm.metric(pollsMetric)
	}
	began := time.Now()
	change()
	changed := time.Now()
	out := make([]outcome, len(vms))
	admitted := make([]bool, len(vms))
	var took []string
	waitFor(t, fmt.Sprintf("%s to reach every VM", name), func() bool {
		for i, vm := range vms {
			if admitted[i] {
				continue
			}
			grown := vm.metric(pollsMetric) - from[i]
			o := vm.send(t, req)
			switch {
			case o.status == 200:
				admitted[i], out[i] = true, o
				took = append(took, fmt.Sprintf("vm %d after %v and %d epoch polls", i, time.Since(changed).Round(time.Millisecond), grown))
			case o.status != 429:
				t.Fatalf("%s: vm %d: %+v", name, i, o)
			case grown > 2:
				t.Fatalf("%s: vm %d still denies %v with %d epoch polls since the change began: %+v", name, i, req, grown, o)
			}
		}
		return !slices.Contains(admitted, false)
	})
	t.Logf("%s (ratelimitctl took %v): admitted by %s", name, changed.Sub(began).Round(time.Millisecond), strings.Join(took, ", "))
	return out
}
