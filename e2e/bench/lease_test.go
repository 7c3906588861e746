package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

const (
	leaseWorkers     = 4 // VMs per host
	leaseLimit       = 1000
	leaseWindow      = 10 * time.Second
	leaseMaxBatch    = leaseLimit / 50 // the default lease.max_batch
	leaseConnections = 16
	leaseRounds      = 3
	// leaseSlice is one configuration's turn: with the others' turns in
	// between, each starts from an empty window (and an empty funnel).
	// Two whole windows, so that an exact sliding log admits a tenth of
	// the load, as it would under a continuous flood: the window opens at
	// 0 s and again at 10 s, each time after being denied for 9 s.
	leaseSlice  = 20 * time.Second
	leaseWarmup = 300 * time.Millisecond
)

// leaseOffered is the open loop's rate: 10x the limit's 100/s.
var leaseOffered = 10 * float64(leaseLimit) / leaseWindow.Seconds()

// leaseRun is one configuration of BenchmarkLeases: a host of its own, on
// a redis-server of its own, so that every script call that server
// serves is this configuration's.
type leaseRun struct {
	name, what string
	user       string
	limit      algorithms.Limit
	config     string
	redis      *redistest.Server
	h          *wasmhost.Host

	mu       sync.Mutex
	arrivals []time.Time // the user's requests as the host took them (Config.StreamInfo)
	received []time.Time // the user's requests the upstream got: the admitted

	redisAt     []int64 // arrivals on Redis's clock (µs since the epoch)
	maxOffset   time.Duration
	res         *Result
	calls0      int64 // script calls Redis served before the first slice
	calls       int64 // during c's slices
	idleCalls   int64 // between and after them (see BenchmarkLeases)
	hostCalls   int64 // proxy_redis_call calls the host made during c's slices
	polls       int64 // epoch polls during c's slices
	idlePolls   int64 // and between and after them
	metrics0    map[string]int64
	metrics     map[string]int64
	exact       int64   // an exact limiter's admissions, on the same arrivals
	maxWindow   float64 // see windowMax and burstMax
	upstreamGot int64
}

var (
	leaseMu      sync.Mutex
	leaseResults []*leaseRun
)

// BenchmarkLeases floods one key at 10x its limit (1000 per 10 s, so
// lease.max_batch defaults to 20), open loop, through the wazero host
// with 4 VMs and a real redis-server, with and without "lease": {}, for a
// sliding log and a funnel of the same capacity. The deny cache is on
// (the default) in every configuration. Configurations take turns in
// slices over several rounds, so that a noisy machine hurts them alike.
// Run it with -benchtime 1x; TestMain prints the table.
//
// Redis calls per request are the script calls (INFO commandstats:
// EVALSHA + EVAL) c's redis-server served during c's slices, epoch polls
// included, over the requests sent in them. The calls it serves between
// slices, while other configurations run, and after the last, are shown
// apart (idle calls): they would be in a steady load's count only as far
// as they are units given back after a slice (ratelimit.lease.returned);
// the rest are epoch polls, which a VM sends each second while its deny
// cache or lease table holds keys, and while idle (its health probe), and
// which a continuous load pays per second, not per idle second.
//
// Exactness. Leases move admissions in time: Redis logs a batch when it
// grants it, and the VM spends it up to max_hold later. Two measures:
//
//   - admitted against exact: exact is what algorithms.Model (the
//     script's reference, itself checked against Redis by the e2e
//     exactness tests) admits when fed the very same arrival stream, one
//     unit per request, each at the moment the host took the request
//     (Config.StreamInfo runs then), moved onto Redis's clock by the
//     offset between Redis's TIME and this process's clock, measured at
//     each slice's start and end. Over the same arrivals the two differ
//     only by what leasing itself changes (plus the host-to-Redis latency,
//     about a request per window reopening at 1000/s).
//   - the most admitted in any window, by the upstream's receive time,
//     against the stated bound limit + VMs x max_batch: for the sliding log
//     the most in any span of 10 s; for the funnel (which admits at most
//     capacity + rate x d in any span d) the most admitted in a span beyond
//     what the funnel leaks meanwhile, max over i <= j of
//     (j - i + 1) - (t_j - t_i) x rate.
func BenchmarkLeases(b *testing.B) {
	m := modules(b)
	var upMu sync.Mutex
	got := map[string][]time.Time{}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		upMu.Lock()
		u := r.Header.Get("x-user")
		got[u] = append(got[u], now)
		upMu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", "3")
		io.WriteString(w, "ok\n")
	}))
	defer upstream.Close()

	logLimit, err := algorithms.NewSlidingLog(leaseLimit, leaseWindow)
	if err != nil {
		b.Fatal(err)
	}
	funnel, err := algorithms.NewFunnel(leaseLimit, leaseLimit, leaseWindow)
	if err != nil {
		b.Fatal(err)
	}
	logJSON := fmt.Sprintf(`{"name":"l","algorithm":"sliding_log","limit":%d,"window":"%s"}`, leaseLimit, leaseWindow)
	funnelJSON := fmt.Sprintf(`{"name":"f","algorithm":"funnel","capacity":%d,"rate":%d,"period":"%s"}`, leaseLimit, leaseLimit, leaseWindow)
	runs := []*leaseRun{
		{name: "log", what: "sliding_log 1000/10s, no lease", limit: logLimit, config: leaseConfig("bl1:", logJSON, "")},
		{name: "log_lease", what: `sliding_log 1000/10s, "lease": {}`, limit: logLimit, config: leaseConfig("bl2:", logJSON, `,"lease":{}`)},
		{name: "funnel", what: "funnel 1000, 1000/10s, no lease", limit: funnel, config: leaseConfig("bf1:", funnelJSON, "")},
		{name: "funnel_lease", what: `funnel 1000, 1000/10s, "lease": {}`, limit: funnel, config: leaseConfig("bf2:", funnelJSON, `,"lease":{}`)},
	}
	for _, c := range runs {
		c.user = "hot-" + c.name
		c.res = &Result{}
		if c.redis, err = redistest.StartServer(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(c.redis.Stop)
		c.h, err = wasmhost.Start(context.Background(), wasmhost.Config{
			Module:        m.Filter,
			PluginConfig:  []byte(c.config),
			Workers:       leaseWorkers,
			Upstream:      upstream.URL,
			RedisClusters: map[string]string{"redis": c.redis.Addr},
			StreamInfo: func(r *http.Request) wasmhost.StreamInfo {
				if r.Header.Get("x-user") == c.user {
					c.mu.Lock()
					c.arrivals = append(c.arrivals, time.Now())
					c.mu.Unlock()
				}
				return wasmhost.StreamInfo{}
			},
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.h.Close() })
		// Warm up on another key, then wait for its leases to go back.
		if _, err := c.load("warm-"+c.name, leaseWarmup); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range runs {
		c.calls0 = quietCalls(b, c.redis)
		c.metrics0 = c.h.Metrics()
	}
	b.ResetTimer()
	for range b.N {
		for round := range leaseRounds {
			for i := range runs {
				c := runs[(i+round)%len(runs)] // rotate who goes first
				if err := c.slice(b); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.StopTimer()
	// Leases not yet spent go back after max_hold (1 s), on a tick.
	time.Sleep(3 * time.Second)
	for _, c := range runs {
		total, _ := redisScriptCalls(b, c.redis)
		c.idleCalls = total - c.calls0 - c.calls
		c.metrics = c.h.Metrics()
		c.idlePolls = c.metrics["ratelimit.epoch.polls"] - c.metrics0["ratelimit.epoch.polls"] - c.polls
		upMu.Lock()
		c.received = append([]time.Time(nil), got[c.user]...)
		upMu.Unlock()
		c.upstreamGot = int64(len(c.received))
		c.exact = exactAdmissions(c.limit, c.redisAt)
		if c.limit.Algorithm == algorithms.Funnel {
			c.maxWindow = burstMax(c.received, c.limit)
		} else {
			c.maxWindow = float64(windowMax(c.received, c.limit.Period))
		}
		n := float64(c.res.Count())
		b.ReportMetric(float64(c.calls)/n, c.name+"-calls/req")
		b.ReportMetric(float64(c.res.CountStatus(200))/float64(c.exact), c.name+"-admitted/exact")
	}
	leaseMu.Lock()
	leaseResults = runs
	leaseMu.Unlock()
}

// leaseConfig is one rule keyed on x-user, with the given limit and lease,
// under its own key prefix.
func leaseConfig(prefix, limit, lease string) string {
	return fmt.Sprintf(`{"redis":{"cluster":"redis","key_prefix":%q},"rules":[{"name":"api",
	"key":[{"source":"header","name":"x-user"}],"limits":[%s]%s}]}`, prefix, limit, lease)
}

// slice runs one turn of c's load on its user and adds it to c's totals.
func (c *leaseRun) slice(b *testing.B) error {
	off0 := redisOffset(b, c.redis)
	c.mu.Lock()
	from := len(c.arrivals)
	c.mu.Unlock()
	calls0, _ := redisScriptCalls(b, c.redis)
	host0 := c.h.RedisCalls()["redis"]
	polls0, _ := c.h.Metric("ratelimit.epoch.polls")
	res, err := c.load(c.user, leaseSlice)
	if err != nil {
		return err
	}
	calls1, _ := redisScriptCalls(b, c.redis)
	polls1, _ := c.h.Metric("ratelimit.epoch.polls")
	c.calls += calls1 - calls0
	c.hostCalls += c.h.RedisCalls()["redis"] - host0
	c.polls += polls1 - polls0
	off1 := redisOffset(b, c.redis)
	off := (off0 + off1) / 2
	c.maxOffset = max(c.maxOffset, abs(off0), abs(off1))
	c.mu.Lock()
	for _, t := range c.arrivals[from:] {
		c.redisAt = append(c.redisAt, t.Add(off).UnixMicro())
	}
	c.mu.Unlock()
	c.res.Merge(res)
	return nil
}

// load sends user's request at leaseOffered for d.
func (c *leaseRun) load(user string, d time.Duration) (*Result, error) {
	res, err := Run(context.Background(), Load{Addr: strings.TrimPrefix(c.h.URL(), "http://"),
		Requests: [][]byte{Request("/api/orders", [2]string{"x-user", user})}, Connections: leaseConnections,
		Duration: d, Rate: leaseOffered})
	if err != nil {
		return nil, err
	}
	if res.Errors > 0 {
		return nil, fmt.Errorf("%s: %d failed requests, first: %v", c.name, res.Errors, res.FirstError)
	}
	if other := res.Count() - res.CountStatus(200) - res.CountStatus(429); other != 0 {
		return nil, fmt.Errorf("%s: %d responses neither 200 nor 429", c.name, other)
	}
	if n := c.h.StuckStreams(); n > 0 {
		return nil, fmt.Errorf("%s: %d streams left paused", c.name, n)
	}
	return res, nil
}

// redisOffset is Redis's clock (TIME) less this process's, read halfway
// through the round trip: the quickest of five, as a slow one (the machine
// busy) leaves the halfway point uncertain by half its length.
func redisOffset(b *testing.B, redis *redistest.Server) time.Duration {
	b.Helper()
	var off, rtt time.Duration
	for i := range 5 {
		before := time.Now()
		t, err := redis.Client.Strings("TIME")
		after := time.Now()
		if err != nil || len(t) != 2 {
			b.Fatalf("TIME: %v %v", t, err)
		}
		sec, err1 := strconv.ParseInt(t[0], 10, 64)
		usec, err2 := strconv.ParseInt(t[1], 10, 64)
		if err1 != nil || err2 != nil {
			b.Fatalf("TIME: %v", t)
		}
		if d := after.Sub(before); i == 0 || d < rtt {
			rtt = d
			off = time.UnixMicro(sec*1_000_000 + usec).Sub(before.Add(d / 2))
		}
	}
	return off
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// quietCalls waits until redis has served no script call for 3 s (the
// warm-up's leases go back after max_hold, and its key is forgotten a
// tick later), at most 10 s, and returns how many it has served.
func quietCalls(b *testing.B, redis *redistest.Server) int64 {
	b.Helper()
	last, _ := redisScriptCalls(b, redis)
	still := time.Now()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(250 * time.Millisecond)
		n, _ := redisScriptCalls(b, redis)
		if n != last {
			last, still = n, time.Now()
		} else if time.Since(still) >= 3*time.Second {
			break
		}
	}
	return last
}

// exactAdmissions is how many of the arrivals (µs on Redis's clock, in
// order) an exact limiter admits, one unit each: the script's reference
// model deciding each alone.
func exactAdmissions(l algorithms.Limit, arrivals []int64) int64 {
	m := algorithms.NewModel()
	var n int64
	for _, at := range arrivals {
		d := m.Decide(at, nil, []algorithms.Check{{Key: "k", Limit: l, Cost: 1}})
		if d.Allowed() {
			n++
		}
	}
	return n
}

// windowMax is the most of the times (in order) in any span shorter than w.
func windowMax(ts []time.Time, w time.Duration) int {
	best, i := 0, 0
	for j := range ts {
		for ts[j].Sub(ts[i]) >= w {
			i++
		}
		best = max(best, j-i+1)
	}
	return best
}

// burstMax is, over every span [t_i, t_j] of the times (in order), the
// count admitted in it less what a funnel of l's rate leaks in it: a
// funnel of capacity c never lets this exceed c.
func burstMax(ts []time.Time, l algorithms.Limit) float64 {
	if len(ts) == 0 {
		return 0
	}
	perSec := float64(l.Rate) / l.Period.Seconds()
	x := func(k int) float64 { return ts[k].Sub(ts[0]).Seconds() * perSec }
	best, lowest := 0.0, 0.0 // lowest: min over i <= j of i - x(i)
	for j := range ts {
		lowest = min(lowest, float64(j)-x(j))
		best = max(best, float64(j+1)-x(j)-lowest)
	}
	return best
}

func printLeaseSummary(w io.Writer) {
	leaseMu.Lock()
	defer leaseMu.Unlock()
	if len(leaseResults) == 0 {
		return
	}
	bound := leaseLimit + leaseWorkers*leaseMaxBatch
	fmt.Fprintf(w, "\nLeases: one key at %.0f/s (10x a limit of %d per %v) through the wazero host, %d VMs, open loop on %d connections;\n"+
		"%d rounds of %v per configuration, interleaved; a redis-server per configuration; deny cache on (default).\n",
		leaseOffered, leaseLimit, leaseWindow, leaseWorkers, leaseConnections, leaseRounds, leaseSlice)
	fmt.Fprintf(w, "exact: algorithms.Model on the same arrivals (Redis's clock). max window: most admitted (upstream receive time) in any %v\n"+
		"(funnel: most admitted in a span beyond what it leaks meanwhile); bound %d = limit + %d VMs x max_batch %d.\n"+
		"redis calls: EVALSHA + EVAL that configuration's redis-server served during its slices, epoch polls included; idle calls: between and after\n"+
		"its slices (epoch polls, units given back). Latency from the scheduled send.\n",
		leaseWindow, bound, leaseWorkers, leaseMaxBatch)
	fmt.Fprintf(w, "%-13s %9s %9s %7s %14s %11s %11s %13s %9s %9s %12s %10s\n",
		"config", "requests", "admitted", "exact", "admitted/exact", "max window", "redis calls", "calls/request", "p50", "p99", "p99 admitted", "idle calls")
	for _, c := range leaseResults {
		n := c.res.Count()
		ok := c.res.CountStatus(200)
		fmt.Fprintf(w, "%-13s %9d %9d %7d %14.4f %5.0f/%-5d %11d %13.4f %9s %9s %12s %10d\n",
			c.name, n, ok, c.exact, float64(ok)/float64(c.exact), c.maxWindow, bound, c.calls, float64(c.calls)/float64(n),
			ms(c.res.Percentile(50)), ms(c.res.Percentile(99)), ms(percentileOf(c.res, 200, 99)), c.idleCalls)
	}
	fmt.Fprintf(w, "\nVMs' metrics over the run (polls and host calls: during the slices; idle polls: outside them); upstream: requests it got.\n")
	fmt.Fprintf(w, "%-13s %7s %7s %7s %7s %9s %9s %6s %11s %10s %11s %9s\n",
		"config", "grants", "units", "local", "held", "returned", "hot_keys", "polls", "idle polls", "deny hits", "host calls", "upstream")
	for _, c := range leaseResults {
		d := func(name string) int64 { return c.metrics[name] - c.metrics0[name] }
		fmt.Fprintf(w, "%-13s %7d %7d %7d %7d %9d %9d %6d %11d %10d %11d %9d\n", c.name,
			d("ratelimit.lease.grants"), d("ratelimit.lease.units"), d("ratelimit.lease.local"), d("ratelimit.lease.held"),
			d("ratelimit.lease.returned"), d("ratelimit.lease.hot_keys"), c.polls, c.idlePolls,
			d("ratelimit.deny_cache.hits"), c.hostCalls, c.upstreamGot)
	}
	var notes []string
	for _, c := range leaseResults {
		if int64(len(c.redisAt)) != c.res.Count() {
			notes = append(notes, fmt.Sprintf("%s: the host took %d requests, the load sent %d", c.name, len(c.redisAt), c.res.Count()))
		}
		if c.upstreamGot != c.res.CountStatus(200) {
			notes = append(notes, fmt.Sprintf("%s: the upstream got %d requests, the load saw %d admitted", c.name, c.upstreamGot, c.res.CountStatus(200)))
		}
		if c.maxOffset > time.Millisecond {
			notes = append(notes, fmt.Sprintf("%s: Redis's clock was up to %v off this process's", c.name, c.maxOffset))
		}
	}
	for _, s := range notes {
		fmt.Fprintln(w, "note:", s)
	}
	fmt.Fprintf(w, "targets with leases: calls/request <= 0.02, admitted within 2%% of exact; without: about 0.10 calls/request\n")
}

// percentileOf is the p-th percentile latency of r's requests answered
// with status.
func percentileOf(r *Result, status int, p float64) time.Duration {
	var lat []time.Duration
	for _, s := range r.Samples {
		if s.Status == status {
			lat = append(lat, s.Latency)
		}
	}
	if len(lat) == 0 {
		return 0
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	i := int(float64(len(lat))*p/100+0.5) - 1
	return lat[max(0, min(i, len(lat)-1))]
}
