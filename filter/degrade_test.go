package filter

import (
	"strings"
	"testing"
)

// sendOnChat is sendStream on the path /v1/chat.
func (h *fakeHost) sendOnChat(headers ...string) (outcome, *fakeStream) {
	h.t.Helper()
	return h.sendStream(append([]string{":path=/v1/chat"}, headers...)...)
}

const degradeRules = `{"redis":{"cluster":"redis"},"deny_cache":{"max_keys":100},"rules":[
	{"name":"tokens","key":[{"source":"header","name":"x-team"}],"cost":{"header":"x-cost"},
	 "limits":[{"name":"per-month","algorithm":"sliding_log","limit":2,"window":"1h"}],
	 "on_limit":{"action":"degrade"}},
	{"name":"per-key","key":[{"source":"header","name":"x-api-key"}],
	 "limits":[{"name":"per-minute","algorithm":"sliding_log","limit":%d,"window":"1m"}]}]}`

// A spent degrade limit admits the request with the header naming it,
// charges the degrade rule nothing, and the enforced rule as ever; the
// next request degrades from the deny cache, with no call for the rule.
func TestDegradeNamesTheSpentLimit(t *testing.T) {
	h := newFakeHost(t, strings.Replace(degradeRules, "%d", "10", 1))
	for i := 1; i <= 2; i++ {
		o, fs := h.sendOnChat("x-team=t1", "x-api-key=k1")
		if o.status != 200 || len(fs.SetRequest) != 0 {
			t.Fatalf("request %d: %d, set %v", i, o.status, fs.SetRequest)
		}
	}
	o, fs := h.sendOnChat("x-team=t1", "x-api-key=k1")
	if o.status != 200 || fs.SetRequest["x-ratelimit-exhausted"] != "tokens/per-month" || len(fs.SetRequest) != 1 {
		t.Fatalf("request 3: %d, set %v", o.status, fs.SetRequest)
	}
	if want := "rule=tokens limit=per-month remaining=0 decision=degraded"; fs.Decision != want {
		t.Fatalf("decision %q, want %q", fs.Decision, want)
	}
	// The response's headers report the enforced rule, which charged it.
	if o.headers["ratelimit"] != `"per-minute";r=7;t=60` || o.headers["ratelimit-policy"] != `"per-minute";q=10;w=60` {
		t.Fatalf("response headers %v", o.headers)
	}
	hits := h.Counters["ratelimit.deny_cache.hits"]
	o, fs = h.sendOnChat("x-team=t1", "x-api-key=k1")
	if o.status != 200 || fs.SetRequest["x-ratelimit-exhausted"] != "tokens/per-month" || h.Counters["ratelimit.deny_cache.hits"] != hits+1 {
		t.Fatalf("request 4: %d, set %v, deny cache hits %d", o.status, fs.SetRequest, h.Counters["ratelimit.deny_cache.hits"]-hits)
	}
	if got := h.logCount("{tokens|t1}:0"); got != 2 {
		t.Fatalf("tokens charged %d, want 2", got)
	}
	if got := h.logCount("{per-key|k1}:0"); got != 4 {
		t.Fatalf("per-key charged %d, want 4", got)
	}
	c := h.Counters
	if c["ratelimit.rule.tokens.degraded"] != 2 || c["ratelimit.rule.tokens.denied"] != 0 || c["ratelimit.rule.tokens.allowed"] != 2 {
		t.Fatalf("tokens degraded %d, denied %d, allowed %d", c["ratelimit.rule.tokens.degraded"], c["ratelimit.rule.tokens.denied"], c["ratelimit.rule.tokens.allowed"])
	}
	// Another team is not degraded.
	if o, fs := h.sendOnChat("x-team=t2", "x-api-key=k1"); o.status != 200 || len(fs.SetRequest) != 0 {
		t.Fatalf("team t2: %d, set %v", o.status, fs.SetRequest)
	}
}

// An enforced rule still denies a degraded request; a cost no limit of a
// degrade rule can admit degrades it, with no call for the rule.
func TestDegradeLeavesEnforcedRulesAndCapacity(t *testing.T) {
	h := newFakeHost(t, strings.Replace(degradeRules, "%d", "1", 1))
	if o, fs := h.sendOnChat("x-team=t1", "x-api-key=k1", "x-cost=3"); o.status != 200 || fs.SetRequest["x-ratelimit-exhausted"] != "tokens/per-month" {
		t.Fatalf("cost 3: %d, set %v", o.status, fs.SetRequest)
	}
	if got := h.logCount("{tokens|t1}:0"); got != 0 {
		t.Fatalf("tokens charged %d for a cost beyond its capacity", got)
	}
	o, fs := h.sendOnChat("x-team=t1", "x-api-key=k1", "x-cost=3")
	if o.status != 429 || len(fs.SetRequest) != 0 || !strings.Contains(o.body, `"rule":"per-key"`) {
		t.Fatalf("per-key spent: %d %q, set %v", o.status, o.body, fs.SetRequest)
	}
}

// A client's own copy of the header is removed, and a request no degrade
// rule spent goes on without it.
func TestDegradeRemovesTheClientsHeader(t *testing.T) {
	h := newFakeHost(t, strings.Replace(degradeRules, "%d", "10", 1))
	o, fs := h.sendOnChat("x-team=t1", "x-api-key=k1", "x-ratelimit-exhausted=tokens/per-month")
	if o.status != 200 || len(fs.SetRequest) != 0 || len(fs.RemovedRequest) != 1 || fs.RemovedRequest[0] != "x-ratelimit-exhausted" {
		t.Fatalf("%d, set %v, removed %v", o.status, fs.SetRequest, fs.RemovedRequest)
	}
	if _, fs := h.sendOnChat("x-team=t1", "x-api-key=k1"); len(fs.RemovedRequest) != 0 {
		t.Fatalf("removed %v from a request without the header", fs.RemovedRequest)
	}
}

// Two degrade rules with one header: each spent limit is named; the one
// not spent is not charged either (their call charges all or nothing).
func TestDegradeTwoRulesShareTheHeader(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[
		{"name":"a","key":[{"source":"header","name":"x-team"}],"limits":[{"name":"day","algorithm":"sliding_log","limit":1,"window":"1h"}],
		 "on_limit":{"action":"degrade","header":"x-fallback"}},
		{"name":"b","key":[{"source":"header","name":"x-team"}],"limits":[{"name":"min","algorithm":"sliding_log","limit":5,"window":"1m"}],
		 "on_limit":{"action":"degrade","header":"x-fallback"}}]}`)
	h.sendOnChat("x-team=t")
	_, fs := h.sendOnChat("x-team=t")
	if fs.SetRequest["x-fallback"] != "a/day" {
		t.Fatalf("set %v", fs.SetRequest)
	}
	if a, b := h.logCount("{a|t}:0"), h.logCount("{b|t}:0"); a != 1 || b != 1 {
		t.Fatalf("charged a %d, b %d; want 1, 1", a, b)
	}
}
