package filter

import "testing"

// onResetCases: what on_reset makes a request that reserved 40 cost when
// its stream ends before its response does, with a default of 3.
var onResetCases = []struct {
	onReset string
	cost    int64
}{
	{"reserved", 40}, // keeps the reservation
	{"nothing", 0},   // refunds it
	{"default", 3},   // charges the default instead
}

// A client that leaves before the response headers, and one that leaves
// once they came but before the response's end, cost what on_reset says:
// the configuration governs either way, and Redis holds exactly that.
func TestOnResetGovernsAStreamCutShort(t *testing.T) {
	for _, tc := range onResetCases {
		for algorithm, limit := range costLimits {
			for _, headers := range []bool{false, true} {
				name := tc.onReset + "/" + algorithm + map[bool]string{false: "/before-headers", true: "/after-headers"}[headers]
				t.Run(name, func(t *testing.T) {
					h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"llm","key":[{"source":"header","name":"x-key"}],
						"limits":[`+limit+`],"response_cost":{"header":"x-used","reserve":{"header":"x-max","default":10},
						"on_reset":"`+tc.onReset+`","default":3}}]}`)
					c := h.admit(40)
					if got := h.units(algorithm); got != 40 {
						t.Fatalf("admitted: Redis holds %d, want the reservation of 40", got)
					}
					if headers {
						c.fs.Upstream = map[string]string{":status": "200", "x-used": "7"}
						c.st.OnResponseHeaders(false) // a body follows, which never ends
					}
					calls := h.Calls
					c.st.OnDone() // the client is gone
					h.Pump()
					if got := h.units(algorithm); got != tc.cost {
						t.Errorf("Redis holds %d, want %d", got, tc.cost)
					}
					if settles := h.Calls - calls; settles != map[bool]uint32{true: 0, false: 1}[tc.cost == 40] {
						t.Errorf("%d settle calls", settles)
					}
					if n := h.Counters["ratelimit.rule.llm.stream_reset"]; n != 1 {
						t.Errorf("stream_reset %d, want 1", n)
					}
					if n := h.Counters["ratelimit.rule.llm.usage_missing"]; n != 0 {
						t.Errorf("usage_missing %d, want 0", n)
					}
				})
			}
		}
	}
}
