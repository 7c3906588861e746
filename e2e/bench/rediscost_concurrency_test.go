package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// BenchmarkRedisCostConcurrency measures a concurrency limit's two calls,
// the acquisition (a decision) and the release (a settle), side by side
// with a one-funnel decision on the same number of keys: each round, each
// case runs a batch, timed with INFO commandstats; the medians of the
// rounds are reported. Run it with -benchtime 1x.
func BenchmarkRedisCostConcurrency(b *testing.B) {
	server := redisServer(b)
	c, err := redistest.Dial(server.Addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	slots, err := algorithms.NewConcurrency(1_000_000, time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	funnel, _ := algorithms.NewFunnel(1_000_000, 1_000_000, time.Second)
	for range b.N {
		prefix := redistest.Prefix(b)
		var funnelUs, acquireUs, releaseUs []float64
		id := int64(0)
		for round := range benchRounds {
			timed := func(run func(i int)) float64 {
				before, beforeCalls := scriptUsec(b, server)
				for i := range benchRound {
					run(i)
				}
				after, afterCalls := scriptUsec(b, server)
				return (after - before) / float64(afterCalls-beforeCalls)
			}
			key := func(kind string, i int) string {
				return fmt.Sprintf("%s%s:{k%d}:0", prefix, kind, (round*benchRound+i)%benchKeys)
			}
			funnelUs = append(funnelUs, timed(func(i int) {
				decideOnce(b, c, nil, []algorithms.Check{{Key: key("funnel", i), Limit: funnel, Cost: 1}})
			}))
			first := id
			acquireUs = append(acquireUs, timed(func(i int) {
				id++
				if d := decideOnce(b, c, nil, []algorithms.Check{{Key: key("slots", i), Limit: slots, Cost: id}}); !d.Allowed() {
					b.Fatalf("acquisition %d denied", id)
				}
			}))
			releaseUs = append(releaseUs, timed(func(i int) {
				settleOnce(b, c, []algorithms.Settle{algorithms.Release(key("slots", i), slots, first+int64(i)+1)})
			}))
		}
		f, a, r := median(funnelUs), median(acquireUs), median(releaseUs)
		fmt.Printf("\nRedis CPU per call (µs of EVALSHA, median of %d rounds of %d), no block key:\n\n", benchRounds, benchRound)
		fmt.Printf("| call | µs | ÷ funnel decision |\n|---|---:|---:|\n| funnel decision | %.2f | 1.00× |\n", f)
		fmt.Printf("| concurrency: acquire | %.2f | %.2f× |\n| concurrency: release | %.2f | %.2f× |\n", a, a/f, r, r/f)
		b.ReportMetric(a/f, "acquire-x-funnel")
		b.ReportMetric(r/f, "release-x-funnel")
	}
}
