package filter

import (
	"strings"
	"testing"
)

// told runs one request and returns the decision the filter told the
// proxy, "" when it told none; it fails the test when it told more than
// once.
func told(t *testing.T, h *fakeHost, headers ...string) (outcome, string) {
	t.Helper()
	o, fs := h.sendStream(headers...)
	if fs.Decisions > 1 {
		t.Fatalf("the decision was set %d times: last %q", fs.Decisions, fs.Decision)
	}
	return o, fs.Decision
}

// expectTold checks one request's status and decision.
func expectTold(t *testing.T, h *fakeHost, status int, want string, headers ...string) {
	t.Helper()
	o, got := told(t, h, headers...)
	if o.status != status || got != want {
		t.Fatalf("%v: %d, decision %q; want %d, %q (body %q)", headers, o.status, got, status, want, o.body)
	}
}

const decisionRules = `{"redis":{"cluster":"redis"},%s"rules":[
	{"name":"api","key":[{"source":"header","name":"x-user"}],"on_missing_key":"deny",
	 "limits":[{"name":"per-minute","algorithm":"sliding_log","limit":2,"window":"1m"},
	           {"name":"per-hour","algorithm":"sliding_log","limit":100,"window":"1h"}]}]}`

func decisionConfig(top string) string { return strings.Replace(decisionRules, "%s", top, 1) }

// Admitted, denied by Redis, then from the deny cache; a missing key and a
// cost beyond capacity, denied without Redis.
func TestDecisionTold(t *testing.T) {
	h := newFakeHost(t, decisionConfig(`"deny_cache":{"max_keys":100},`))
	expectTold(t, h, 200, "rule=api limit=per-minute remaining=1 decision=allowed", "x-user=a")
	expectTold(t, h, 200, "rule=api limit=per-minute remaining=0 decision=allowed", "x-user=a")
	expectTold(t, h, 429, "rule=api limit=per-minute remaining=0 decision=denied reason=rate_limited", "x-user=a")
	expectTold(t, h, 429, "rule=api limit=per-minute remaining=0 decision=denied reason=rate_limited from=deny_cache", "x-user=a")
	expectTold(t, h, 400, "rule=api decision=denied reason=missing_key")
}

// decision_filter_state false: nothing is told.
func TestDecisionOff(t *testing.T) {
	h := newFakeHost(t, decisionConfig(`"decision_filter_state":false,`))
	expectTold(t, h, 200, "", "x-user=a")
	expectTold(t, h, 200, "", "x-user=a")
	expectTold(t, h, 429, "", "x-user=a")
}

// A request no rule decides tells nothing: the access log shows "-".
func TestDecisionNoneWithoutRule(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"api","match":{"path_prefix":"/api/"},
		"key":[{"source":"header","name":"x-user"}],"limits":[{"algorithm":"sliding_log","limit":2,"window":"1m"}]}]}`)
	expectTold(t, h, 200, "", "x-user=a")
}

func TestDecisionCostBeyondCapacity(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"api","key":[{"source":"header","name":"x-user"}],
		"cost":{"header":"x-cost"},"limits":[{"name":"burst","algorithm":"funnel","capacity":5,"rate":5,"period":"1s"}]}]}`)
	expectTold(t, h, 400, "rule=api limit=burst decision=denied reason=cost_exceeds_capacity", "x-user=a", "x-cost=6")
}

// An operator's block key.
func TestDecisionBlocked(t *testing.T) {
	h := newFakeHost(t, decisionConfig(""))
	if _, err := server.Do("SET", h.plugin.cfg.Redis.Prefix+"{api|mallory}:block", "1", "PX", "60000"); err != nil {
		t.Fatal(err)
	}
	expectTold(t, h, 429, "rule=api decision=denied reason=blocked", "x-user=mallory")
}

// Redis down: failure_mode allow admits, deny denies, local decides in the
// VM; each says so.
func TestDecisionFailureMode(t *testing.T) {
	for _, tc := range []struct{ top, want, second string }{
		{`"failure_mode":"allow",`, "decision=allowed reason=ratelimit_unavailable", "decision=allowed reason=ratelimit_unavailable"},
		{`"failure_mode":"deny",`, "decision=denied reason=ratelimit_unavailable", "decision=denied reason=ratelimit_unavailable"},
		{`"failure_mode":"local","local_fallback":{"share":0.5},`, "rule=api limit=per-minute remaining=0 decision=allowed from=local",
			"rule=api limit=per-minute remaining=0 decision=denied reason=rate_limited from=local"},
	} {
		h := newFakeHost(t, decisionConfig(tc.top))
		h.Down = true
		status := map[bool]int{true: 503, false: 200}[strings.Contains(tc.want, "denied")]
		expectTold(t, h, status, tc.want, "x-user=a")
		status = map[bool]int{true: 503, false: 200}[strings.Contains(tc.second, "denied")]
		if strings.Contains(tc.second, "rate_limited") {
			status = 429
		}
		expectTold(t, h, status, tc.second, "x-user=a")
	}
}

// A shadow rule alone says shadow=true; a shadow rule that would deny an
// admitted request makes it would_deny, naming that rule.
func TestDecisionShadow(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[
		{"name":"api","match":{"path_prefix":"/api/"},"key":[{"source":"header","name":"x-user"}],
		 "limits":[{"name":"wide","algorithm":"sliding_log","limit":100,"window":"1m"}]},
		{"name":"trial","shadow":true,"key":[{"source":"header","name":"x-user"}],
		 "limits":[{"name":"narrow","algorithm":"sliding_log","limit":1,"window":"1m"}]}]}`)
	expectTold(t, h, 200, "rule=trial limit=narrow remaining=0 decision=allowed shadow=true", "x-user=a")
	expectTold(t, h, 200, "rule=trial limit=narrow remaining=0 decision=would_deny reason=rate_limited", "x-user=a")
	expectTold(t, h, 200, "rule=trial limit=narrow remaining=0 decision=would_deny reason=rate_limited", ":path=/api/x", "x-user=a")
	expectTold(t, h, 200, "rule=api limit=wide remaining=99 decision=allowed", ":path=/api/y", "x-user=c")
}

// near_limit counts the admissions past near_limit_ratio of a limit, once
// per rule: with 10 and 0.8, the 9th and 10th request; with 0.5, the
// 6th to the 10th. Denials do not count.
func TestNearLimitCounts(t *testing.T) {
	for _, tc := range []struct {
		top  string
		want uint64
	}{{"", 2}, {`"near_limit_ratio":0.5,`, 5}} {
		h := newFakeHost(t, `{"redis":{"cluster":"redis"},`+tc.top+`"rules":[{"name":"api","key":[{"source":"header","name":"x-user"}],
			"limits":[{"name":"ten","algorithm":"sliding_log","limit":10,"window":"1m"},
			          {"name":"eleven","algorithm":"sliding_log","limit":11,"window":"1m"}]}]}`)
		for i := 1; i <= 12; i++ {
			want := 200
			if i > 10 {
				want = 429
			}
			if o := h.send("x-user=a"); o.status != want {
				t.Fatalf("request %d: %+v", i, o)
			}
			near := uint64(0)
			switch {
			case tc.want == 2 && i >= 9, tc.want == 5 && i >= 6:
				near = uint64(min(i, 10)) - (10 - tc.want)
			}
			if got := h.Counters["ratelimit.rule.api.near_limit"]; got != near {
				t.Fatalf("%s after request %d: near_limit %d, want %d", tc.top, i, got, near)
			}
		}
	}
}

func TestShareOf(t *testing.T) {
	for _, tc := range []struct{ n, ratio, want int64 }{
		{10, 800_000, 8}, {11, 800_000, 8}, {1, 999_999, 0}, {1_000_000, 1, 1},
		{1 << 50, 500_000, 1 << 49}, {3_000_001, 333_333, 999_999},
	} {
		if got := shareOf(tc.n, tc.ratio); got != tc.want {
			t.Errorf("shareOf(%d, %d) = %d, want %d", tc.n, tc.ratio, got, tc.want)
		}
	}
}
