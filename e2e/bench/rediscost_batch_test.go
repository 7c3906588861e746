package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// BenchmarkRedisCostBatch measures Redis's time (commandstats usec of
// FCALL) for the one call of a JSON-RPC batch as its distinct keys grow:
// n keys of a rule with a call key part (the split hash tag
// {tools|<user>}|<tool>}), each with its block key and one limit, weighted
// costs of 1 to 60, every batch admitted. It is the measurement behind
// config.MaxBatchStates. Run it with -benchtime 1x.
func BenchmarkRedisCostBatch(b *testing.B) {
	server := redisServer(b)
	c, err := redistest.Dial(server.Addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	log, _ := algorithms.NewSlidingLog(1_000_000, time.Minute)
	funnel, _ := algorithms.NewFunnel(1_000_000, 1_000_000, time.Second)
	counter, _ := algorithms.NewSlidingCounter(1_000_000, time.Minute)
	for range b.N {
		prefix := redistest.Prefix(b)
		for _, algo := range []struct {
			name  string
			limit algorithms.Limit
		}{{"sliding_log", log}, {"funnel", funnel}, {"sliding_counter", counter}} {
			for _, n := range []int{8, 16, 64} {
				const users, calls = 50, 200
				blocks := make([][]string, users)
				checks := make([][]algorithms.Check, users)
				for u := range users {
					for i := range n {
						base := fmt.Sprintf("%s{tools|%s-user-%04d}|tool_%02d}", prefix, algo.name, u, i)
						blocks[u] = append(blocks[u], base+":block")
						checks[u] = append(checks[u], algorithms.Check{Key: base + ":0", Limit: algo.limit, Cost: int64(1 + (u+i)%60)})
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
					if err == nil && !d.Allowed() {
						err = fmt.Errorf("batch of %d keys denied: %+v", n, d)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				after, afterCalls := scriptUsec(b, server)
				per := (after - before) / float64(afterCalls-beforeCalls)
				b.ReportMetric(per, fmt.Sprintf("%s-%d-us/call", algo.name, n))
				b.ReportMetric(per/float64(n), fmt.Sprintf("%s-%d-us/key", algo.name, n))
				fmt.Printf("%-16s %3d keys: %8.1f us/call, %.2f us/key\n", algo.name, n, per, per/float64(n))
			}
		}
	}
}
