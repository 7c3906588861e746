package filter

import (
	"strconv"
	"testing"
)

// twoRules: a rule on every path (3 a minute) and a calendar rule on /m.
const twoRules = `{"redis":{"cluster":"redis"},"headers":"both","rules":[
	{"name":"all","key":[{"source":"header","name":"x-user"}],
	 "limits":[{"name":"per-minute","algorithm":"sliding_log","limit":3,"window":"1m"}]},
	{"name":"month","match":{"path":"/m"},"key":[{"source":"header","name":"x-user"}],
	 "limits":[{"name":"per-month","algorithm":"calendar","limit":100,"period":"month"}]}]}`

// spend sends the 3 requests the rule on every path admits.
func spend(t *testing.T, h *fakeHost, headers ...string) {
	t.Helper()
	for i := range 3 {
		if o := h.send(headers...); o.status != 200 {
			t.Fatalf("request %d: %d %s", i, o.status, o.body)
		}
	}
}

// A denial the deny cache answers carries the headers of the fresh denial
// of the same request: with a rule on every path and a calendar rule on
// /m, both rules' policies in RateLimit-Policy, the same RateLimit and
// status (issue 30). Retry-After may only be smaller.
func TestDenyCacheRepeatsTheFreshDenialsPolicies(t *testing.T) {
	h := newFakeHost(t, twoRules)
	spend(t, h, ":path=/m", "x-user=a")
	calls := h.Calls
	fresh := h.send(":path=/m", "x-user=a")
	if fresh.status != 429 || h.Calls == calls {
		t.Fatalf("fourth request: %d with %d calls, want 429 from Redis", fresh.status, h.Calls-calls)
	}
	calls = h.Calls
	cached := h.send(":path=/m", "x-user=a")
	if h.Calls != calls {
		t.Fatalf("fifth request made %d Redis calls, want the deny cache's answer", h.Calls-calls)
	}
	if cached.status != fresh.status {
		t.Fatalf("cached status %d, fresh %d", cached.status, fresh.status)
	}
	for _, name := range []string{"ratelimit-policy", "ratelimit", "x-ratelimit-limit", "x-ratelimit-remaining"} {
		if cached.headers[name] != fresh.headers[name] {
			t.Errorf("%s: cached %q, fresh %q", name, cached.headers[name], fresh.headers[name])
		}
	}
	if c, f := atoi(t, cached.headers["retry-after"]), atoi(t, fresh.headers["retry-after"]); c < 1 || c > f {
		t.Errorf("retry-after: cached %q, fresh %q", cached.headers["retry-after"], fresh.headers["retry-after"])
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

// A cached denial lists another request's rules only when it matches
// them: after a denial on /m (both rules), a request on /x, which only
// the rule on every path matches, gets that rule's RateLimit-Policy from
// the cache, as its own fresh denial would give, not the calendar rule's.
func TestDenyCacheRepeatsOnlyTheRequestsOwnPolicies(t *testing.T) {
	h := newFakeHost(t, twoRules)
	spend(t, h, ":path=/x", "x-user=b")
	own := h.send(":path=/x", "x-user=b") // a fresh denial on /x: "all" only
	spend(t, h, ":path=/m", "x-user=a")
	both := h.send(":path=/m", "x-user=a") // a fresh denial on /m: both rules
	calls := h.Calls
	cached := h.send(":path=/x", "x-user=a")
	if h.Calls != calls || cached.status != 429 || own.status != 429 || both.status != 429 {
		t.Fatalf("statuses %d, %d, cached %d with %d calls", own.status, both.status, cached.status, h.Calls-calls)
	}
	if got, want := cached.headers["ratelimit-policy"], own.headers["ratelimit-policy"]; got != want || got == both.headers["ratelimit-policy"] {
		t.Errorf("a cached denial on /x lists %q; want %q, what a fresh denial on /x lists (on /m: %q)", got, want, both.headers["ratelimit-policy"])
	}
}
