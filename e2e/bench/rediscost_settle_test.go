package bench

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// settleCase is one response_cost pattern: each request is decided on
// its limits (one key each), then settled once its response's cost is
// known, in one call for all of them. reserve is what the decision charges
// each limit (0: it checks only); cost is the real cost the settle brings.
type settleCase struct {
	name          string
	limits        []algorithms.Limit
	reserve, cost int64
}

// settleCost is what one settleCase costs Redis per call, in µs of EVALSHA
// (INFO commandstats): the decision with its reservation, and the settle.
type settleCost struct {
	decideUsec, settleUsec float64
	applied                int64 // what each settle applied to its first limit: < 0 refunded, > 0 charged
}

var (
	settleCostsMu sync.Mutex
	settleCosts   = map[string]settleCost{}
	settleOrder   []string
)

// BenchmarkRedisCostSettle measures the settle script call a response_cost
// rule adds (one per request whose real cost differs from its reservation)
// against the decision that precedes it, on the same keys, side by side:
// in each round every case decides a batch of requests (one block key, as
// the filter sends by default), then settles the same batch, each phase
// timed with INFO commandstats; the medians of the rounds are reported.
// Run it with -benchtime 1x.
func BenchmarkRedisCostSettle(b *testing.B) {
	server := redisServer(b)
	c, err := redistest.Dial(server.Addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	funnel, _ := algorithms.NewFunnel(100, 100, time.Second)
	log, _ := algorithms.NewSlidingLog(100, time.Minute)
	counter, _ := algorithms.NewSlidingCounter(100, time.Minute)
	one := func(l algorithms.Limit) []algorithms.Limit { return []algorithms.Limit{l} }
	cases := []settleCase{
		{"funnel reserve 10, settle 3", one(funnel), 10, 3},
		{"funnel check, settle 3", one(funnel), 0, 3},
		{"sliding_log reserve 10, settle 3", one(log), 10, 3},
		{"sliding_log check, settle 3", one(log), 0, 3},
		{"sliding_counter reserve 10, settle 3", one(counter), 10, 3},
		{"funnel+sliding_log reserve 10, settle 3", []algorithms.Limit{funnel, log}, 10, 3},
	}
	type admitted struct {
		keys []string
		at   int64
	}
	batch := make([]admitted, benchRound)
	for range b.N {
		prefix := redistest.Prefix(b)
		// Per case, each round's µs per call: the medians are reported, so
		// that a burst from a neighbour on the machine skews no case.
		decideUsec := make([][]float64, len(cases))
		settleUsec := make([][]float64, len(cases))
		applied := make([]int64, len(cases))
		for round := range benchRounds {
			for ci, sc := range cases {
				checks := make([]algorithms.Check, len(sc.limits))
				settles := make([]algorithms.Settle, len(sc.limits))
				for li, l := range sc.limits {
					checks[li] = algorithms.Check{Limit: l, Cost: sc.reserve, CheckOnly: sc.reserve == 0}
					settles[li] = algorithms.Settle{Limit: l, Reserved: sc.reserve, Cost: sc.cost}
				}
				before, beforeCalls := scriptUsec(b, server)
				for i := range benchRound {
					n := round*benchRound + i
					tag := fmt.Sprintf("%ssettle%d:{k%d}", prefix, ci, n%benchKeys)
					keys := batch[i].keys[:0]
					for li := range checks {
						checks[li].Key = fmt.Sprintf("%s:%d", tag, li)
						keys = append(keys, checks[li].Key)
					}
					d := decideOnce(b, c, []string{tag + ":block"}, checks)
					if !d.Allowed() {
						b.Fatalf("%s: request %d denied; the settles measured would not be the filter's", sc.name, n)
					}
					batch[i] = admitted{keys, d.Now}
				}
				mid, midCalls := scriptUsec(b, server)
				for i := range benchRound {
					for li := range settles {
						settles[li].Key, settles[li].At = batch[i].keys[li], batch[i].at
					}
					s := settleOnce(b, c, settles)
					applied[ci] = s.Results[0].Applied
				}
				after, afterCalls := scriptUsec(b, server)
				decideUsec[ci] = append(decideUsec[ci], (mid-before)/float64(midCalls-beforeCalls))
				settleUsec[ci] = append(settleUsec[ci], (after-mid)/float64(afterCalls-midCalls))
			}
		}
		for ci, sc := range cases {
			r := settleCost{median(decideUsec[ci]), median(settleUsec[ci]), applied[ci]}
			metric := strings.NewReplacer(" ", "_", ",", "", "+", "_").Replace(sc.name)
			b.ReportMetric(r.settleUsec/r.decideUsec, metric+"-settle/decide")
			settleCostsMu.Lock()
			if _, ok := settleCosts[sc.name]; !ok {
				settleOrder = append(settleOrder, sc.name)
			}
			settleCosts[sc.name] = r
			settleCostsMu.Unlock()
		}
	}
}

// decideOnce sends one decision through the library's decide.
func decideOnce(b *testing.B, c *redistest.Conn, blocks []string, checks []algorithms.Check) algorithms.Decision {
	b.Helper()
	v, err := c.Decode(c.RoundTrip(algorithms.AppendFCall(nil, blocks, checks)))
	var d algorithms.Decision
	if err == nil {
		err = d.Parse(v, len(blocks), len(checks))
	}
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// settleOnce sends one settle call, as the filter frames it for Redis.
func settleOnce(b *testing.B, c *redistest.Conn, settles []algorithms.Settle) algorithms.Settlement {
	b.Helper()
	v, err := c.Decode(c.RoundTrip(algorithms.AppendSettle(nil, algorithms.RESP, algorithms.FCall, settles)))
	var s algorithms.Settlement
	if err == nil {
		err = s.Parse(v, len(settles))
	}
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// printSettleCosts prints BenchmarkRedisCostSettle's table, if it ran.
func printSettleCosts(w io.Writer) {
	settleCostsMu.Lock()
	defer settleCostsMu.Unlock()
	if len(settleOrder) == 0 {
		return
	}
	var sb strings.Builder
	sb.WriteString("\nRedis cost of a response_cost settle against its decision (decide: 1 block key and the case's limits; settle: one call for them all), median of the rounds, one run, side by side:\n")
	fmt.Fprintf(&sb, "%-42s %14s %14s %14s %9s\n", "case", "decide us/call", "settle us/call", "settle/decide", "applied")
	for _, n := range settleOrder {
		c := settleCosts[n]
		fmt.Fprintf(&sb, "%-42s %14.2f %14.2f %13.2fx %9d\n", n, c.decideUsec, c.settleUsec, c.settleUsec/c.decideUsec, c.applied)
	}
	io.WriteString(w, sb.String())
}
