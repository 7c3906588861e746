package e2e

import (
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// A cost header cannot buy a way past a spent limit: after 5 requests of
// cost 1 and a 429, x-cost: 0 (which used to peek, and be admitted) is
// denied, through both builds in the host with real Redis and natively.
// Only cost.min: 0 opts in to peeks.
func TestCostHeaderCannotPassSpentLimit(t *testing.T) {
	for _, name := range kinds {
		t.Run(name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			tg := startTarget(t, name, `{"redis":{"cluster":"redis","timeout":"2s","key_prefix":"`+prefix+`"},"rules":[{"name":"hourly",
				"key":[{"source":"header","name":"x-user"}],"cost":{"header":"x-cost","default":1},
				"limits":[{"algorithm":"sliding_log","limit":5,"window":"1h"}]}]}`, server.Addr)
			for range 5 {
				expect(t, tg.send(t, user("u")), 200)
			}
			expect(t, tg.send(t, user("u")), 429)
			for _, cost := range []string{"0", "0", "-1", "x"} {
				o := tg.send(t, map[string]string{"x-user": "u", "x-cost": cost})
				if o.status != 429 {
					t.Fatalf("x-cost %q after a 429: %d %v, want 429", cost, o.status, o.headers)
				}
			}
		})
	}
}
