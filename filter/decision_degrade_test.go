package filter

import "testing"

// A degraded request's line gives what its spent limit has left only when
// a call said it now: a budget of 10 with 7 spent, a reservation of 5 is
// degraded with 3 left (not 0); answered from the deny cache, or above the
// limit's capacity, the line leaves remaining out (issue 30).
func TestDecisionDegradedRemaining(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"deny_cache":{"max_keys":100},"rules":[
		{"name":"budget","key":[{"source":"header","name":"x-team"}],"cost":{"header":"x-cost"},
		 "limits":[{"name":"hour","algorithm":"sliding_log","limit":10,"window":"1h"}],
		 "on_limit":{"action":"degrade"}}]}`)
	expectTold(t, h, 200, "rule=budget limit=hour remaining=3 decision=allowed", "x-team=t", "x-cost=7")
	expectTold(t, h, 200, "rule=budget limit=hour remaining=3 decision=degraded", "x-team=t", "x-cost=5")
	expectTold(t, h, 200, "rule=budget limit=hour decision=degraded", "x-team=t", "x-cost=5")
	expectTold(t, h, 200, "rule=budget limit=hour decision=degraded", "x-team=u", "x-cost=11")
}
