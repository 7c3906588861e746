package filter

import (
	"strconv"
	"testing"
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
