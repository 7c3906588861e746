package filter

import "testing"

// A request admitted by failure_mode: allow while Redis is down reserved
// nothing in Redis, so when it settles after Redis is back the settle
// carries reserved 0 and Redis is charged its whole real cost: more or
// less than its reservation estimate (x-max), never cost - estimate.
func TestFailOpenSettleChargesTheWholeCost(t *testing.T) {
	for algorithm, limit := range costLimits {
		for _, tc := range []struct {
			name          string
			reserve, used int64
		}{
			{"used above the estimate", 10, 25},
			{"used below the estimate", 10, 4},
		} {
			t.Run(algorithm+"/"+tc.name, func(t *testing.T) {
				h := newFakeHost(t, costConfig(limit, `"failure_mode":"allow",`))
				h.Down = true
				c := h.admit(tc.reserve)
				if n := h.Counters["ratelimit.failure_mode.allowed"]; n != 1 {
					t.Fatalf("admitted with Redis down: failure_mode.allowed %d, want 1 (%v)", n, h.Counters)
				}
				h.Down = false
				calls := h.Calls
				h.finish(c, tc.used)
				if h.Calls != calls+1 {
					t.Fatalf("%d settle calls after Redis came back, want 1", h.Calls-calls)
				}
				if got := h.units(algorithm); got != tc.used {
					t.Fatalf("reserve %d, used %d, admitted with Redis down: Redis holds %d after the settle, want %d",
						tc.reserve, tc.used, got, tc.used)
				}
				if e := h.Counters["ratelimit.settle.errors"]; e != 0 {
					t.Fatalf("%d settle errors", e)
				}
			})
		}
	}
}
