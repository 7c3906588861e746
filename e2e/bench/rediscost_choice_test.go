package bench

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// choiceCase is one shape of a rule's call: its limits decided plainly,
// or picked in Redis from tiers and an override.
type choiceCase struct {
	name         string
	tiers        []algorithms.Tier // nil: the first tier's limits as plain checks
	tierKey      bool
	overrideKey  bool
	overrideSet  bool // the override key holds limits, which decide
	tierAssigned bool // the tier key names the second tier
}

// BenchmarkRedisCostChoice measures what tiers and overrides read from
// Redis add to a decision, side by side with the same limits decided
// plainly: each round, every case decides a batch of requests (one block
// key, as the filter sends by default), timed with INFO commandstats; the
// medians of the rounds are reported. Run it with -benchtime 1x.
func BenchmarkRedisCostChoice(b *testing.B) {
	server := redisServer(b)
	c, err := redistest.Dial(server.Addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	must := func(l algorithms.Limit, err error) algorithms.Limit {
		if err != nil {
			b.Fatal(err)
		}
		return l
	}
	tiers := func(perSecond int64) []algorithms.Tier {
		return []algorithms.Tier{
			{Name: "free", Limits: []algorithms.Limit{must(algorithms.NewFunnel(1_000_000, perSecond, time.Second)),
				must(algorithms.NewSlidingCounter(100_000_000, time.Hour))}},
			{Name: "pro", Limits: []algorithms.Limit{must(algorithms.NewFunnel(2_000_000, perSecond, time.Second)),
				must(algorithms.NewSlidingCounter(200_000_000, time.Hour))}},
		}
	}
	override, err := algorithms.EncodeOverride(tiers(500_000)[1].Limits)
	if err != nil {
		b.Fatal(err)
	}
	cases := []choiceCase{
		{name: "plain"},
		{name: "one tier sent, no key read", tiers: tiers(1_000_000)[:1]},
		{name: "tier from redis (unset)", tiers: tiers(1_000_000), tierKey: true},
		{name: "tier from redis (pro)", tiers: tiers(1_000_000), tierKey: true, tierAssigned: true},
		{name: "tier and override (unset)", tiers: tiers(1_000_000), tierKey: true, overrideKey: true},
		{name: "tier and override (set)", tiers: tiers(1_000_000), tierKey: true, overrideKey: true, overrideSet: true},
	}
	for range b.N {
		prefix := redistest.Prefix(b)
		usec := make([][]float64, len(cases))
		for ci, cc := range cases {
			for k := range benchKeys {
				setup(b, c, cc, fmt.Sprintf("%schoice%d:{k%d}", prefix, ci, k), override)
			}
		}
		for round := range benchRounds {
			for ci, cc := range cases {
				before, beforeCalls := scriptUsec(b, server)
				for i := range benchRound {
					n := round*benchRound + i
					base := fmt.Sprintf("%schoice%d:{k%d}", prefix, ci, n%benchKeys)
					d := decideChoice(b, c, cc, base, tiers(1_000_000)[0].Limits)
					if !d.Allowed() {
						b.Fatalf("%s: request %d denied", cc.name, n)
					}
				}
				after, afterCalls := scriptUsec(b, server)
				usec[ci] = append(usec[ci], (after-before)/float64(afterCalls-beforeCalls))
			}
		}
		fmt.Printf("\nRedis CPU per decision (µs of EVALSHA, median of %d rounds of %d), two limits (funnel + sliding counter), one block key:\n\n", benchRounds, benchRound)
		fmt.Println("| call | µs | ÷ plain |\n|---|---:|---:|")
		plain := median(usec[0])
		for ci, cc := range cases {
			m := median(usec[ci])
			fmt.Printf("| %s | %.2f | %.2f× |\n", cc.name, m, m/plain)
			b.ReportMetric(m/plain, strings.NewReplacer(" ", "_", "(", "", ")", "").Replace(cc.name)+"-x-plain")
		}
	}
}

// setup writes a case's tier and override keys for one rule key.
func setup(b *testing.B, c *redistest.Conn, cc choiceCase, base, override string) {
	b.Helper()
	if cc.tierAssigned {
		c.RoundTrip(redistest.AppendArgs(nil, "SET", base+":tier", "pro"))
	}
	if cc.overrideSet {
		c.RoundTrip(redistest.AppendArgs(nil, "SET", base+":override", override))
	}
}

func decideChoice(b *testing.B, c *redistest.Conn, cc choiceCase, base string, plain []algorithms.Limit) algorithms.Decision {
	b.Helper()
	blocks := []string{base + ":block"}
	var checks []algorithms.Check
	var choices []algorithms.Choice
	if cc.tiers == nil {
		for i, l := range plain {
			checks = append(checks, algorithms.Check{Key: fmt.Sprintf("%s:%d", base, i), Limit: l, Cost: 1})
		}
	} else {
		ch := algorithms.Choice{Tiers: cc.tiers, Cost: 1, Keys: []string{base + ":0", base + ":1"}}
		if cc.tierKey {
			ch.TierKey = base + ":tier"
		}
		if cc.overrideKey {
			ch.OverrideKey = base + ":override"
		}
		choices = []algorithms.Choice{ch}
	}
	d := callOnce(b, c, blocks, checks, choices)
	if cc.overrideSet && d.Picks[0] != algorithms.PickOverride || cc.tierAssigned && !cc.overrideSet && d.Picks[0] != 1 {
		b.Fatalf("%s: picked %v", cc.name, d.Picks)
	}
	return d
}

// callOnce sends one call with choices through the library's decide.
func callOnce(b *testing.B, c *redistest.Conn, blocks []string, checks []algorithms.Check, choices []algorithms.Choice) algorithms.Decision {
	b.Helper()
	raw, err := c.RoundTrip(algorithms.AppendCall(nil, algorithms.RESP, algorithms.FCall, algorithms.OpDecide, blocks, checks, choices))
	if err != nil {
		b.Fatal(err)
	}
	v, err := c.Decode(raw, nil)
	var d algorithms.Decision
	if err == nil {
		err = d.ParseCall(v, len(blocks), len(checks), choices)
	}
	if err != nil {
		b.Fatal(err)
	}
	return d
}
