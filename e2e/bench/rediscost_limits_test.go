package bench

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// BenchmarkRedisCostPerLimits measures Redis's time (commandstats usec of
// EVALSHA) for one request's call as the limits it carries grow: n limits
// in rules of up to 16, each rule with its block key, keys of 8 parts (about
// 300 bytes), every request admitted. It is the measurement behind
// config.MaxRequestLimits. Run it with -benchtime 1x.
func BenchmarkRedisCostPerLimits(b *testing.B) {
	server := redisServer(b)
	c, err := redistest.Dial(server.Addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	log, _ := algorithms.NewSlidingLog(1_000_000, time.Minute)
	funnel, _ := algorithms.NewFunnel(1_000_000, 1_000_000, time.Second)
	counter, _ := algorithms.NewSlidingCounter(1_000_000, time.Minute)
	slots, _ := algorithms.NewConcurrency(1_000_000, time.Minute)
	parts := strings.Repeat("|"+strings.Repeat("v", 32), 8)
	for range b.N {
		prefix := redistest.Prefix(b)
		for _, algo := range []struct {
			name  string
			limit algorithms.Limit
		}{{"sliding_log", log}, {"funnel", funnel}, {"sliding_counter", counter}, {"concurrency", slots}} {
			for _, n := range []int{1, 2, 4, 8, 12, 16, 64} {
				const users, calls = 50, 200
				blocks := make([][]string, users)
				checks := make([][]algorithms.Check, users)
				for u := range users {
					for i := range n {
						base := fmt.Sprintf("%s{%s%d%s|r%d}", prefix, algo.name, u, parts, i/8) // rules of 8 limits
						if i%8 == 0 {
							blocks[u] = append(blocks[u], base+":block")
						}
						checks[u] = append(checks[u], algorithms.Check{Key: fmt.Sprintf("%s:%d", base, i%8), Limit: algo.limit, Cost: 1})
					}
				}
				before, beforeCalls := scriptUsec(b, server)
				for i := range calls {
					u := i % users
					v, err := c.Decode(c.RoundTrip(algorithms.AppendFCall(nil, blocks[u], checks[u])))
					var d algorithms.Decision
					if err == nil {
						err = d.Parse(v, len(blocks[u]), n)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				after, afterCalls := scriptUsec(b, server)
				per := (after - before) / float64(afterCalls-beforeCalls)
				b.ReportMetric(per, fmt.Sprintf("%s-%d-us/call", algo.name, n))
				fmt.Printf("%-16s %5d limits: %8.1f us/call, %.2f us/limit\n", algo.name, n, per, per/float64(n))
			}
		}
	}
}
