package filter

import (
	"strconv"
	"strings"
	"testing"
)

// A degraded request was charged nothing by its degrade rule, so its
// response settles nothing there: a cheap response must not refund its
// reservation into a spent budget. Kills settleCall losing its "only a
// charged, allowed decision settles" condition (response.go): a counter's
// and a calendar period's count would move by the refund. The deny
// cache is off: a degrade it decides makes no call, so nothing to settle.
func TestDegradedResponseSettlesNothing(t *testing.T) {
	for _, limit := range []string{
		`{"algorithm":"calendar","limit":100,"period":"month"}`,
		`{"algorithm":"sliding_counter","limit":100,"window":"1h"}`,
	} {
		h := newFakeHost(t, `{"redis":{"cluster":"redis"},"deny_cache":{"max_keys":0},"rules":[{"name":"llm","key":[{"source":"header","name":"x-key"}],
			"limits":[`+limit+`],"on_limit":{"action":"degrade"},
			"response_cost":{"header":"x-used","reserve":{"header":"x-max","default":10}}}]}`)
		h.finish(h.admit(100), 100) // spends the limit
		period, spent := h.count(limit)
		for i := range 3 {
			c := h.admit(40)
			if c.fs.SetRequest["x-ratelimit-exhausted"] == "" {
				t.Fatalf("%s: request %d was not degraded: set %v", limit, i+1, c.fs.SetRequest)
			}
			h.finish(c, 1)                                                 // 39 below its reservation
			if now, got := h.count(limit); now == period && got != spent { // another period counts anew
				t.Fatalf("%s: after degraded response %d the limit holds %d, want %d as before", limit, i+1, got, spent)
			}
		}
	}
}

// count is what the key "{llm|k}:0" holds: a calendar period's end and
// count, or a sliding counter's window and count in it.
func (h *fakeHost) count(limit string) (period string, n int64) {
	h.t.Helper()
	field := "e" // the calendar's period
	if strings.Contains(limit, "sliding_counter") {
		field = "w"
	}
	v, err := server.Do("HMGET", h.plugin.cfg.Redis.Prefix+"{llm|k}:0", field, "c")
	if err != nil {
		h.t.Fatal(err)
	}
	f, _ := v.([]any)
	if len(f) != 2 {
		h.t.Fatalf("%s: %v", limit, v)
	}
	period, _ = f[0].(string)
	c, _ := f[1].(string)
	if n, err = strconv.ParseInt(c, 10, 64); err != nil {
		h.t.Fatalf("%s: count %v: %v", limit, v, err)
	}
	return period, n
}
