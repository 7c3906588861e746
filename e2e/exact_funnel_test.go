package e2e

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// TestExactFunnelModel runs the script itself from 16 connections at once
// against one funnel and one token bucket sharing each call, with costs 0
// to 3, until Redis has both admitted and denied 100 calls that cost
// something (at least 90 units beyond the funnel's capacity of 10: 0.9 s
// of draining on Redis's clock), then replays every call through
// algorithms.Model at the time Redis reported, in that order, and demands
// identical decisions. Redis runs scripts one at a time and each reads
// TIME, so the times order the calls as Redis executed them; a script
// takes well over a microsecond, so no two calls share a time, which is
// asserted.
func TestExactFunnelModel(t *testing.T) {
	const conns, each = 16, 100
	prefix := redistest.Prefix(t)
	funnel, err := algorithms.NewFunnel(10, 100, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	bucket, err := algorithms.TokenBucket(30, 400, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tag := prefix + "{fun|x}"
	blocks := []string{tag + ":block"}
	keys := []string{tag + ":0", tag + ":1"}
	checksFor := func(cost int64) []algorithms.Check {
		return []algorithms.Check{{Key: keys[0], Limit: funnel, Cost: cost}, {Key: keys[1], Limit: bucket, Cost: cost}}
	}

	var mu sync.Mutex
	var calls []scriptCall
	var allowed, denied atomic.Int64
	enough := func() bool { return allowed.Load() >= each && denied.Load() >= each }
	var failed problems
	var wg sync.WaitGroup
	for g := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := redistest.Dial(server.Addr)
			if err != nil {
				failed.add("dial: %v", err)
				return
			}
			defer c.Close()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			var mine []scriptCall
			for deadline := time.Now().Add(waitGuard); !enough() && time.Now().Before(deadline); {
				cost := rng.Int64N(4)
				d, err := decide(c, blocks, checksFor(cost))
				if err != nil {
					failed.add("call: %v", err)
					return
				}
				mine = append(mine, scriptCall{blocks: blocks, keys: keys, costs: []int64{cost, cost}, decided: true, decision: d})
				switch {
				case cost == 0: // a peek, always allowed
				case d.Allowed():
					allowed.Add(1)
				default:
					denied.Add(1)
				}
			}
			mu.Lock()
			calls = append(calls, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	failed.check(t)
	if !enough() {
		t.Fatalf("gave up after %v: %d allowed, %d denied", waitGuard, allowed.Load(), denied.Load())
	}
	r := &scriptRecord{calls: calls}
	replay(t, r.decisions(t), map[string]algorithms.Limit{keys[0]: funnel, keys[1]: bucket})
	t.Logf("funnel + token bucket: %d concurrent script calls from %d connections replayed through the model, all identical (%d allowed and %d denied that cost something, over %v of Redis's time)",
		len(calls), conns, allowed.Load(), denied.Load(), redisSpan(r.decisions(t)))
}

// decide calls the library's decide on c, as the filter does.
func decide(c *redistest.Conn, blocks []string, checks []algorithms.Check) (algorithms.Decision, error) {
	var d algorithms.Decision
	v, err := c.Decode(c.RoundTrip(algorithms.AppendFCall(nil, blocks, checks)))
	if err != nil {
		return d, err
	}
	err = d.Parse(v, len(blocks), len(checks))
	return d, err
}

// TestExactFunnelThroughHost: 32 clients and 4 VMs pour into one funnel of
// capacity 20 draining 100/s (T = 10 ms), until Redis has admitted 120 and
// denied some. Every call, recorded between the host and Redis, replays
// through the model at Redis's times with identical decisions; the 200s,
// the arrivals at the upstream and the admissions agree; and GCRA's bound
// holds: at most capacity + span / T admitted, the span of the decisions
// lying within the first send and the last answer.
func TestExactFunnelThroughHost(t *testing.T) {
	const capacity, interval, clients = 20, 10 * time.Millisecond, 32
	prefix := redistest.Prefix(t)
	rec := newRecorder(t)
	h, calls := startRecorded(t, prefix, rec.URL, `[{"name":"pour","key":[{"source":"constant","value":"all"}],"limits":[{"algorithm":"funnel","capacity":20,"rate":100,"period":"1s"}]}]`)
	began := time.Now()
	all := hammer(t, h.URL()+"/pour", clients, func() bool {
		return calls.admitted.Load() >= capacity+100 && calls.denied.Load() >= 4
	})
	var last time.Time
	admitted := 0
	for _, s := range all {
		if s.status != 200 && s.status != 429 {
			t.Fatalf("status %d", s.status)
		}
		if s.status == 200 {
			admitted++
		}
		if s.answered.After(last) {
			last = s.answered
		}
	}
	funnel, err := algorithms.NewFunnel(capacity, 100, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	admissions := replay(t, calls.decisions(t), map[string]algorithms.Limit{prefix + "{pour|all}:0": funnel})
	if arrived := len(rec.arrivals()); arrived != admitted || len(admissions) != admitted {
		t.Fatalf("%d answered 200, %d reached the upstream, %d admitted in Redis's record", admitted, arrived, len(admissions))
	}
	elapsed := last.Sub(began)
	if bound := capacity + int(elapsed/interval); admitted > bound {
		t.Fatalf("funnel admitted %d in %v; GCRA allows at most %d", admitted, elapsed, bound)
	}
	t.Logf("funnel via host: %d requests, %d admitted in %v, every decision the model's; bound %d (capacity %d + %v / %v)",
		len(all), admitted, elapsed.Round(time.Millisecond), capacity+int(elapsed/interval), capacity, elapsed.Round(time.Millisecond), interval)
}

// redisSpan is the time between the first and the last of calls, in
// Redis's order, on Redis's clock.
func redisSpan(calls []scriptCall) time.Duration {
	if len(calls) == 0 {
		return 0
	}
	return time.Duration(calls[len(calls)-1].decision.Now-calls[0].decision.Now) * time.Microsecond
}
