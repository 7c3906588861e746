package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// BenchmarkRedisCostThrottle measures what a throttle costs Redis, side by
// side with the same funnel decided plainly and as a choice without one:
// a throttled request admitted at once, and one held (its funnel full, so
// it is charged as of its conformance time). Each round, each case decides
// a batch on its own keys (one block key, as the filter sends), timed with
// INFO commandstats; the medians of the rounds are reported. Run it with
// -benchtime 1x.
func BenchmarkRedisCostThrottle(b *testing.B) {
	server := redisServer(b)
	c, err := redistest.Dial(server.Addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	// One request an hour, so that a key's second request is held.
	funnel, err := algorithms.NewFunnel(1, 1, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	tiers := []algorithms.Tier{{Name: "default", Limits: []algorithms.Limit{funnel}}}
	for range b.N {
		prefix := redistest.Prefix(b)
		cases := []string{"plain funnel", "as a choice, no throttle", "throttle, admitted at once", "throttle, held"}
		us := make([][]float64, len(cases))
		for round := range benchRounds {
			for ci, name := range cases {
				key := func(i int) string { return fmt.Sprintf("%s%d:{k%d.%d}", prefix, ci, round, i) }
				var throttle time.Duration
				if ci >= 2 {
					throttle = 2 * time.Hour
				}
				if ci == 3 { // fill each funnel first
					for i := range benchRound {
						throttleCall(b, c, key(i), tiers, throttle, false)
					}
				}
				before, beforeCalls := scriptUsec(b, server)
				for i := range benchRound {
					d := throttleCall(b, c, key(i), tiers, throttle, ci == 0)
					if !d.Allowed() || (d.Delay > 0) != (ci == 3) {
						b.Fatalf("%s: allowed %t, delay %v", name, d.Allowed(), d.Delay)
					}
				}
				after, afterCalls := scriptUsec(b, server)
				us[ci] = append(us[ci], (after-before)/float64(afterCalls-beforeCalls))
			}
		}
		base := median(us[0])
		fmt.Printf("\nRedis CPU per call (µs of EVALSHA, median of %d rounds of %d), one funnel, one block key:\n\n", benchRounds, benchRound)
		fmt.Printf("| call | µs | ÷ plain funnel |\n|---|---:|---:|\n")
		for ci, name := range cases {
			m := median(us[ci])
			fmt.Printf("| %s | %.2f | %.2f× |\n", name, m, m/base)
		}
		b.ReportMetric(median(us[2])/base, "throttle-x-plain")
		b.ReportMetric(median(us[3])/base, "held-x-plain")
	}
}

// throttleCall decides key's funnel: as a plain check, or as a choice
// with the given throttle (none when 0).
func throttleCall(b *testing.B, c *redistest.Conn, key string, tiers []algorithms.Tier, throttle time.Duration, plain bool) algorithms.Decision {
	b.Helper()
	blocks := []string{key + ":block"}
	var checks []algorithms.Check
	var choices []algorithms.Choice
	if plain {
		checks = []algorithms.Check{{Key: key + ":0", Limit: tiers[0].Limits[0], Cost: 1}}
	} else {
		choices = []algorithms.Choice{{Tiers: tiers, Cost: 1, Keys: []string{key + ":0"}, Throttle: throttle}}
	}
	return callOnce(b, c, blocks, checks, choices)
}
