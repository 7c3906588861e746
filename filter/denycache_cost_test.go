package filter

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// The deny cache answers only what Redis denied: a request costing at
// least the denied one is denied locally, with no call, but a cheaper one
// goes to Redis, which admits it when it fits. With 10 units an hour, 8
// spent: a cost of 5 is denied (by Redis, then by the cache), a cost of 1
// is admitted by Redis.
func TestDenyCacheAnswersOnlyCostsItDenied(t *testing.T) {
	limits := map[string]string{
		"sliding_log":     `{"algorithm":"sliding_log","limit":10,"window":"1h"}`,
		"sliding_counter": `{"algorithm":"sliding_counter","limit":10,"window":"1h"}`,
		"funnel":          `{"algorithm":"funnel","capacity":10,"rate":10,"period":"1h"}`,
	}
	steps := []struct {
		cost   int64
		status int
		calls  uint32 // Redis calls the request makes
		why    string
	}{
		{8, 200, 1, "8 of 10"},
		{5, 429, 1, "5 more: Redis denies"},
		{5, 429, 0, "5 again: the cache denies"},
		{6, 429, 0, "6: the cache denies a higher cost too"},
		{1, 200, 1, "1: cheaper than the denial, Redis admits it"},
		{1, 200, 1, "1 more: the last unit"},
	}
	for algorithm, limit := range limits {
		t.Run(algorithm, func(t *testing.T) {
			h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"r",
				"key":[{"source":"header","name":"x-user"}],"cost":{"header":"x-cost","default":1},
				"limits":[`+limit+`]}]}`)
			for i, s := range steps {
				calls := h.Calls
				o := h.send("x-user=a", "x-cost="+strconv.FormatInt(s.cost, 10))
				if o.status != s.status || h.Calls-calls != s.calls {
					t.Fatalf("request %d, cost %d (%s): status %d with %d Redis calls, want %d with %d (%s)",
						i, s.cost, s.why, o.status, h.Calls-calls, s.status, s.calls, o.body)
				}
			}
		})
	}
}

// A flood on one denied key is answered with the reply last rendered for
// it while the seconds of Retry-After stay the same, and with a new one
// when they change: every answer says what a fresh rendering would.
func TestDenyCacheReplyFollowsRetryAfter(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"headers":"both","rules":[{"name":"r",
		"key":[{"source":"header","name":"x-user"}],
		"limits":[{"name":"per-minute","algorithm":"funnel","capacity":1,"rate":1,"period":"60s"}]}]}`)
	t0 := time.Now()
	h.Clock = t0
	if o := h.send("x-user=a"); o.status != 200 {
		t.Fatalf("first request: %d, want 200", o.status)
	}
	denied := h.send("x-user=a")
	if denied.status != 429 {
		t.Fatalf("second request: %d, want 429 from Redis", denied.status)
	}
	secs := func(o outcome) int {
		n, err := strconv.Atoi(o.headers["retry-after"])
		if err != nil || o.headers["x-ratelimit-reset"] != o.headers["retry-after"] ||
			!strings.HasSuffix(o.headers["ratelimit"], ";t="+o.headers["retry-after"]) ||
			!strings.Contains(o.body, `"retry_after":`+o.headers["retry-after"]+"}") {
			t.Fatalf("reply disagrees with its Retry-After: %v %s", o.headers, o.body)
		}
		return n
	}
	first := secs(denied)
	calls := h.Calls
	for _, step := range []struct {
		after time.Duration
		want  int
	}{{0, first}, {100 * time.Millisecond, first}, {1500 * time.Millisecond, first - 1}, {1600 * time.Millisecond, first - 1}, {2 * time.Second, first - 2}} {
		h.Clock = t0.Add(step.after)
		o := h.send("x-user=a")
		if o.status != 429 || secs(o) != step.want && secs(o) != step.want+1 {
			t.Fatalf("%v after the denial: %d with Retry-After %s, want 429 with %d", step.after, o.status, o.headers["retry-after"], step.want)
		}
	}
	if h.Calls != calls {
		t.Fatalf("%d Redis calls during the flood, want the cache to answer all", h.Calls-calls)
	}
}
