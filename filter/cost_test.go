package filter

import (
	"fmt"
	"strings"
	"testing"
)

// A cost of 0 peeks under every algorithm: it is answered like any request
// and charges nothing, as the README promises for any non-negative cost.
func TestZeroCostPeeksEveryAlgorithm(t *testing.T) {
	for _, limit := range []string{
		`{"algorithm":"sliding_log","limit":2,"window":"1m"}`,
		`{"algorithm":"sliding_counter","limit":2,"window":"1m"}`,
		`{"algorithm":"funnel","capacity":2,"rate":1,"period":"1h"}`,
		`{"algorithm":"token_bucket","capacity":2,"refill":1,"period":"1h"}`,
	} {
		algorithm := strings.Split(limit, `"`)[3]
		t.Run(algorithm, func(t *testing.T) {
			h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"peek","key":[{"source":"header","name":"x-user"}],
				"cost":{"header":"x-cost","default":1},"limits":[`+limit+`]}]}`)
			for i, want := range []struct {
				cost      string
				status    int
				remaining string
			}{{"0", 200, "r=2"}, {"0", 200, "r=2"}, {"1", 200, "r=1"}, {"0", 200, "r=1"}, {"1", 200, "r=0"}, {"0", 200, "r=0"}, {"1", 429, "r=0"}} {
				o := h.send("x-user=a", "x-cost="+want.cost)
				got := o.headers["ratelimit"]
				if o.status != want.status || !strings.Contains(got, want.remaining+";") {
					t.Fatalf("request %d (cost %s): %d %q %s; want %d with %s (%v)", i, want.cost, o.status, got, o.body, want.status, want.remaining, h.logs)
				}
			}
		})
	}
}

// The most limits a configuration can put on one request, every rule
// matching, are decided in one call and parsed from one reply.
func TestLargestRequestIsDecided(t *testing.T) {
	var rules []string
	for r := range MaxRequestLimits / maxLimitsPerRule {
		var limits []string
		for l := range maxLimitsPerRule {
			limits = append(limits, fmt.Sprintf(`{"name":"l%d","algorithm":"sliding_counter","limit":%d,"window":"1m"}`, l, 1+r+l))
		}
		rules = append(rules, fmt.Sprintf(`{"name":"r%d","key":[{"source":"header","name":"x-user"}],"limits":[%s]}`, r, strings.Join(limits, ",")))
	}
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[`+strings.Join(rules, ",")+`]}`)
	if o := h.send("x-user=a"); o.status != 200 || !strings.HasPrefix(o.headers["ratelimit"], `"l0";r=0;`) {
		t.Fatalf("first request: %d %q %s", o.status, o.headers["ratelimit"], o.body)
	}
	if o := h.send("x-user=a"); o.status != 429 || !strings.Contains(o.body, `"rule":"r0","limit":"l0"`) {
		t.Fatalf("second request: %d %s", o.status, o.body)
	}
	if n := h.Counters["ratelimit.redis.errors"]; n != 0 {
		t.Fatalf("%d Redis errors: %v", n, h.logs)
	}
}
