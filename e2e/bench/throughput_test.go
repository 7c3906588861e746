package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

const (
	loadConnections = 16
	loadRounds      = 3
	loadSlice       = 2 * time.Second // per configuration per round
	loadWarmup      = 500 * time.Millisecond
	loadUsers       = 10000

	floodLimit = 100 // per second, sliding log
	floodRate  = 10 * floodLimit
)

// allowedConfig admits everything: the limits of the fixture, raised far
// beyond what the load can reach, on many users.
const allowedConfig = `{"redis":{"cluster":"redis"},"rules":[{"name":"api","match":{"path_prefix":"/api/"},
	"key":[{"source":"header","name":"x-user"},{"source":"path"}],
	"limits":[{"name":"second","algorithm":"sliding_log","limit":1000000,"window":"1s"},
	          {"name":"minute","algorithm":"funnel","capacity":1000000,"rate":1000000,"period":"1m"}]}]}`

// floodConfig limits each user to floodLimit per second; cacheKeys is the
// deny cache's size (0 disables it).
func floodConfig(cacheKeys int) string {
	return fmt.Sprintf(`{"redis":{"cluster":"redis"},"deny_cache":{"max_keys":%d},"rules":[{"name":"api",
	"key":[{"source":"header","name":"x-user"}],
	"limits":[{"name":"second","algorithm":"sliding_log","limit":%d,"window":"1s"}]}]}`, cacheKeys, floodLimit)
}

// loadConfig is one configuration of the throughput benchmark.
type loadConfig struct {
	name     string
	what     string
	h        *wasmhost.Host
	requests [][]byte
	rate     float64 // 0: closed loop
	statuses []int   // the statuses it may answer

	res                 *Result
	cpu, redisCPU       time.Duration
	redisScript         time.Duration // in EVALSHA and EVAL (commandstats)
	redisCalls          int64
	redisConns          int64 // connections Redis accepted
	cacheHits, allowedN int64
}

var (
	loadMu      sync.Mutex
	loadResults []*loadConfig
)

// BenchmarkThroughput sends real HTTP through the wazero host (two VMs, as
// Envoy runs one per worker) to a real upstream, with the filter's calls
// going to a real redis-server, and compares configurations side by side:
// they take turns in slices over several rounds, so a noisy neighbour
// slows them alike. Closed loop (16 keep-alive connections, each sending
// as soon as it has its answer): no filter at all (wasmhost.StartPassThrough),
// the no-op filter, and the rate-limit filter admitting everything (many
// users, huge limits), each compiled as the Host compiles by default and
// compiled with wasmhost.WithoutTermination. Open loop: one key flooded at 10x
// its limit, with and without the deny cache. Run it with -benchtime 1x;
// TestMain prints the table.
func BenchmarkThroughput(b *testing.B) {
	m := modules(b)
	redis := redisServer(b)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", "3")
		io.WriteString(w, "ok\n")
	}))
	defer upstream.Close()

	start := func(mod *wasmhost.Module, config string) *wasmhost.Host {
		h, err := wasmhost.Start(context.Background(), wasmhost.Config{
			Module:        mod,
			PluginConfig:  []byte(config),
			Upstream:      upstream.URL,
			RedisClusters: map[string]string{"redis": redis.Addr},
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { h.Close() })
		return h
	}
	none, err := wasmhost.StartPassThrough(wasmhost.Config{Upstream: upstream.URL})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { none.Close() })

	users := make([][]byte, loadUsers)
	for i := range users {
		users[i] = Request("/api/orders", [2]string{"x-user", "u" + strconv.Itoa(i)})
	}
	flooder := func(name string) [][]byte { return [][]byte{Request("/api/orders", [2]string{"x-user", name})} }
	closed := []*loadConfig{
		{name: "none", what: "no filter: the host without a VM", h: none, requests: users, statuses: []int{200}},
		{name: "noop", what: "no-op wasm filter", h: start(m.Noop, ""), requests: users, statuses: []int{200}},
		{name: "filter", what: "rate-limit filter, all allowed", h: start(m.Filter, allowedConfig), requests: users, statuses: []int{200}},
		{name: "noop_nocheck", what: "no-op, WithoutTermination", h: start(m.NoopNoCheck, ""), requests: users, statuses: []int{200}},
		{name: "filter_nocheck", what: "filter, WithoutTermination", h: start(m.FilterNoCheck, allowedConfig), requests: users, statuses: []int{200}},
	}
	open := []*loadConfig{
		{name: "flood_nocache", what: "one key at 10x its limit, no deny cache", h: start(m.Filter, floodConfig(0)),
			requests: flooder("mallory"), rate: floodRate, statuses: []int{200, 429}},
		{name: "flood_cache", what: "one key at 10x its limit, deny cache", h: start(m.Filter, floodConfig(10000)),
			requests: flooder("trudy"), rate: floodRate, statuses: []int{200, 429}},
	}
	all := append(append([]*loadConfig(nil), closed...), open...)
	for _, c := range all {
		if _, err := c.run(loadWarmup); err != nil {
			b.Fatal(err)
		}
		c.res = &Result{}
	}
	b.ResetTimer()
	for range b.N {
		for round := range loadRounds {
			for _, group := range [][]*loadConfig{closed, open} {
				for i := range group {
					c := group[(i+round)%len(group)] // rotate who goes first
					if err := c.measure(b, redis); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
	}
	b.StopTimer()
	for _, c := range all {
		b.ReportMetric(c.res.PerSecond(), c.name+"-req/s")
	}
	loadMu.Lock()
	loadResults = all
	loadMu.Unlock()
}

// measure runs one slice of c and adds it to c's totals.
func (c *loadConfig) measure(b *testing.B, redis *redistest.Server) error {
	calls0, script0 := redisScriptCalls(b, redis)
	rcpu0 := redisCPU(b, redis)
	hits0, _ := c.h.Metric("ratelimit.deny_cache.hits")
	allowed0, _ := c.h.Metric("ratelimit.rule.api.allowed")
	conns0 := redisInfo(b, redis, "stats", "total_connections_received")
	cpu0 := processCPU()
	res, err := c.run(loadSlice)
	if err != nil {
		return err
	}
	c.cpu += processCPU() - cpu0
	c.redisCPU += redisCPU(b, redis) - rcpu0
	calls, script := redisScriptCalls(b, redis)
	c.redisCalls += calls - calls0
	c.redisScript += script - script0
	c.redisConns += int64(redisInfo(b, redis, "stats", "total_connections_received") - conns0)
	hits, _ := c.h.Metric("ratelimit.deny_cache.hits")
	allowed, _ := c.h.Metric("ratelimit.rule.api.allowed")
	c.cacheHits += hits - hits0
	c.allowedN += allowed - allowed0
	c.res.Merge(res)
	return nil
}

func (c *loadConfig) run(d time.Duration) (*Result, error) {
	addr := strings.TrimPrefix(c.h.URL(), "http://")
	res, err := Run(context.Background(), Load{Addr: addr, Requests: c.requests, Connections: loadConnections, Duration: d, Rate: c.rate})
	if err != nil {
		return nil, err
	}
	if res.Errors > 0 {
		return nil, fmt.Errorf("%s: %d failed requests, first: %v", c.name, res.Errors, res.FirstError)
	}
	other := res.Count()
	for _, s := range c.statuses {
		other -= res.CountStatus(s)
	}
	if other != 0 {
		return nil, fmt.Errorf("%s: %d responses with a status other than %v", c.name, other, c.statuses)
	}
	if n := c.h.StuckStreams(); n > 0 {
		return nil, fmt.Errorf("%s: %d streams left paused", c.name, n)
	}
	return res, nil
}

// redisScriptCalls is how many EVALSHA and EVAL calls Redis has served,
// and the time it spent running them.
func redisScriptCalls(b *testing.B, redis *redistest.Server) (int64, time.Duration) {
	b.Helper()
	var total, usec int64
	for _, cmd := range []string{"fcall", "evalsha", "eval"} {
		calls, u, err := redis.CommandUsec(cmd)
		if err != nil {
			b.Fatal(err)
		}
		total += calls
		usec += u
	}
	return total, time.Duration(usec) * time.Microsecond
}

// redisCPU is the CPU time redis-server has used (INFO cpu).
func redisCPU(b *testing.B, redis *redistest.Server) time.Duration {
	b.Helper()
	s := redisInfo(b, redis, "cpu", "used_cpu_sys") + redisInfo(b, redis, "cpu", "used_cpu_user")
	return time.Duration(s * float64(time.Second))
}

// redisInfo reads one numeric field of an INFO section.
func redisInfo(b *testing.B, redis *redistest.Server, section, field string) float64 {
	b.Helper()
	info, err := redis.Client.Text("INFO", section)
	if err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if ok && k == field {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatalf("INFO %s %s: %q", section, field, v)
			}
			return f
		}
	}
	b.Fatalf("INFO %s has no %s", section, field)
	return 0
}

// processCPU is the CPU time of this process: the load generator, the
// host with its VMs, and the upstream.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func printThroughputSummary(w io.Writer) {
	loadMu.Lock()
	defer loadMu.Unlock()
	if len(loadResults) == 0 {
		return
	}
	by := map[string]*loadConfig{}
	for _, c := range loadResults {
		by[c.name] = c
	}
	fmt.Fprintf(w, "\nThrough the wazero host: %d rounds of %v per configuration, interleaved; %d connections.\n", loadRounds, loadSlice, loadConnections)
	fmt.Fprintf(w, "CPU/req is this process's CPU (load generator + host + upstream) per request; Redis CPU/req from INFO cpu.\n")
	fmt.Fprintf(w, "%-15s %9s %9s %9s %11s %13s %13s %15s %15s  %s\n", "config", "req/s", "p50", "p99", "CPU/req", "Redis CPU/req", "script/call", "Redis calls/req", "Redis conns/req", "what")
	for _, c := range loadResults {
		n := float64(c.res.Count())
		script := "-"
		if c.redisCalls > 0 {
			script = fmt.Sprintf("%.1fµs", float64(c.redisScript.Microseconds())/float64(c.redisCalls))
		}
		fmt.Fprintf(w, "%-15s %9.0f %9s %9s %9.1fµs %11.1fµs %13s %15.3f %15.3f  %s\n", c.name, c.res.PerSecond(),
			ms(c.res.Percentile(50)), ms(c.res.Percentile(99)),
			float64(c.cpu.Microseconds())/n, float64(c.redisCPU.Microseconds())/n, script, float64(c.redisCalls)/n,
			float64(c.redisConns)/n, c.what)
	}
	ratio := func(a, b string) float64 { return by[a].res.PerSecond() / by[b].res.PerSecond() }
	fmt.Fprintf(w, "filter / noop throughput:                  %.2f   (target >= 0.90)\n", ratio("filter", "noop"))
	fmt.Fprintf(w, "filter_nocheck / noop_nocheck throughput:  %.2f\n", ratio("filter_nocheck", "noop_nocheck"))
	fmt.Fprintf(w, "noop / none throughput:                    %.2f\n", ratio("noop", "none"))
	fmt.Fprintf(w, "noop_nocheck / none throughput:            %.2f\n", ratio("noop_nocheck", "none"))
	for _, name := range []string{"flood_nocache", "flood_cache"} {
		c := by[name]
		n := c.res.Count()
		ok, denied := c.res.CountStatus(200), c.res.CountStatus(429)
		fmt.Fprintf(w, "%s: %d requests at %d/s for a limit of %d/s: %d allowed (%.3f), %d denied, %d denied from the cache;\n"+
			"  Redis calls per request %.3f, per denied request %.3f (calls beyond one per allowed request)\n",
			name, n, floodRate, floodLimit, ok, float64(ok)/float64(n), denied, c.cacheHits,
			float64(c.redisCalls)/float64(n), float64(c.redisCalls-ok)/float64(denied))
	}
	fmt.Fprintf(w, "flood Redis calls per request with the cache: %.3f   (target <= 0.05; at 10x the limit, the allowed tenth alone needs 0.10)\n",
		float64(by["flood_cache"].redisCalls)/float64(by["flood_cache"].res.Count()))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }
