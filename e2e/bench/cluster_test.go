package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/clusterslot"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
	"github.com/redisrate/envoy-redis-ratelimit/internal/dist"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// clusterUsers is how many users the cluster benchmark's load spreads
// over; their keys' slots are spread over the masters evenly (±5%).
const clusterUsers = 30000

// clusterRule is allowedConfig's rule: it admits everything.
const clusterRule = `[{"name":"api","match":{"path_prefix":"/api/"},
	"key":[{"source":"header","name":"x-user"},{"source":"path"}],
	"limits":[{"name":"second","algorithm":"sliding_log","limit":1000000,"window":"1s"},
	          {"name":"minute","algorithm":"funnel","capacity":1000000,"rate":1000000,"period":"1m"}]}]`

// clusterRun is one cluster size of BenchmarkCluster and its totals.
type clusterRun struct {
	masters  int
	c        *redistest.Cluster
	nodes    []*redistest.Server
	webdis   []int // Webdis process ids
	h        *wasmhost.Host
	requests [][]byte

	res                 *Result
	decisions           int64
	redisCPU, webdisCPU time.Duration
	fcalls, fcallUsec   int64
	hostCPU             time.Duration
	perMaster           []int   // users whose key is on each master
	callsBy             []int64 // FCALLs measured on each master
	mapLoads            int64
	idleRedis           time.Duration // Redis CPU in loadSlice without load, summed over the masters
}

// BenchmarkCluster runs the stock build through the wazero host (two VMs)
// against a Redis Cluster of 1 and then 3 masters, no replicas, a real
// Webdis in front of each (redis.nodes), with throughput_test.go's load
// (16 connections, closed loop, everything admitted) on 30000 users whose
// slots are spread evenly. The two take turns, 3 rounds of 2 s each. It
// reports decisions/s, and per decision the Redis CPU summed over the
// masters (INFO cpu), FCALL's time (INFO commandstats) and the Webdis
// processes' CPU (/proc). On this 2-core machine 3 masters cannot decide
// more per second than 1; the CPU per decision is what carries over. Run
// it with -benchtime 1x.
func BenchmarkCluster(b *testing.B) {
	stock, err := dist.Read(dist.Stock)
	if err != nil {
		b.Fatal(err)
	}
	dir, err := dist.CacheDir()
	if err != nil {
		b.Fatal(err)
	}
	mod, err := wasmhost.Compile(context.Background(), stock, wasmhost.WithCacheDir(dir))
	if err != nil {
		b.Fatal(err)
	}
	defer mod.Close(context.Background())
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", "3")
		io.WriteString(w, "ok\n")
	}))
	defer upstream.Close()

	runs := []*clusterRun{{masters: 1}, {masters: 3}}
	for _, r := range runs {
		r.start(b, mod, upstream.URL)
		if _, err := r.run(loadWarmup); err != nil {
			b.Fatal(err)
		}
		r.res = &Result{}
	}
	for _, r := range runs {
		cpu0, _, _ := r.redisTotals(b)
		time.Sleep(loadSlice)
		cpu, _, _ := r.redisTotals(b)
		r.idleRedis = cpu - cpu0
	}
	b.ResetTimer()
	for range b.N {
		for round := range loadRounds {
			for i := range runs {
				if err := runs[(i+round)%len(runs)].measure(b); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.StopTimer()
	for _, r := range runs {
		b.ReportMetric(float64(r.decisions)/r.res.Elapsed.Seconds(), strconv.Itoa(r.masters)+"m-decisions/s")
	}
	printClusterSummary(os.Stdout, runs)
	for _, r := range runs {
		r.check(b)
	}
}

// start starts the cluster, its Webdis and the host, and picks the users.
func (r *clusterRun) start(b *testing.B, mod *wasmhost.Module, upstream string) {
	before := childrenNamed("webdis")
	r.c = redistest.StartClusterWith(b, redistest.ClusterOptions{Masters: r.masters})
	r.nodes = r.c.Nodes
	webdis := redistest.StartWebdisPerNode(b, r.c, "", "", []string{"FCALL", "CLUSTER"})
	for pid := range childrenNamed("webdis") {
		if !before[pid] {
			r.webdis = append(r.webdis, pid)
		}
	}
	if len(r.webdis) != r.masters {
		b.Fatalf("%d Webdis processes found for %d masters", len(r.webdis), r.masters)
	}
	var nodes []string
	clusters := map[string]string{}
	for i, s := range r.nodes {
		name := "webdis-" + strconv.Itoa(i)
		nodes = append(nodes, fmt.Sprintf(`{"address":%q,"cluster":%q}`, s.Addr, name))
		clusters[name] = webdis[s.Addr]
	}
	conf := fmt.Sprintf(`{"redis":{"transport":"webdis","username":%q,"password":%q,"cluster_mode":true,"nodes":[%s]},"rules":%s}`,
		redistest.WebdisUser, redistest.WebdisPassword, strings.Join(nodes, ","), clusterRule)
	cfg, err := config.Parse([]byte(conf))
	if err != nil {
		b.Fatal(err)
	}
	rule, _ := cfg.Rule("api")
	r.perMaster, r.callsBy = make([]int, r.masters), make([]int64, r.masters)
	for i := range clusterUsers {
		u := "u" + strconv.Itoa(i)
		r.requests = append(r.requests, Request("/api/orders", [2]string{"x-user", u}))
		key, err := keyspace.RuleKey(cfg, rule, []string{u, "/api/orders"})
		if err != nil {
			b.Fatal(err)
		}
		// Master i of StartClusterWith owns slots i*16384/n to (i+1)*16384/n-1.
		r.perMaster[int(clusterslot.Slot(key))*r.masters/clusterslot.Slots]++
	}
	for i, n := range r.perMaster {
		if even := clusterUsers / r.masters; n < even*95/100 || n > even*105/100 {
			b.Fatalf("%d masters: %d users on master %d; want %d ±5%%", r.masters, n, i, even)
		}
	}
	r.h, err = wasmhost.Start(context.Background(), wasmhost.Config{Module: mod, PluginConfig: []byte(conf),
		Upstream: upstream, HTTPClusters: clusters, Workers: 2})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.h.Close() })
}

// measure runs one slice and adds it to r's totals.
func (r *clusterRun) measure(b *testing.B) error {
	dec0, _ := r.h.Metric("ratelimit.rule.api.allowed")
	loads0, _ := r.h.Metric("ratelimit.redis.slot_map_loads")
	rcpu0, calls0, usec0 := r.redisTotals(b)
	by0 := r.callsByMaster(b)
	wcpu0 := pidsCPU(b, r.webdis)
	cpu0 := processCPU()
	res, err := r.run(loadSlice)
	if err != nil {
		return err
	}
	r.hostCPU += processCPU() - cpu0
	r.webdisCPU += pidsCPU(b, r.webdis) - wcpu0
	rcpu, calls, usec := r.redisTotals(b)
	r.redisCPU += rcpu - rcpu0
	r.fcalls += calls - calls0
	r.fcallUsec += usec - usec0
	for i, n := range r.callsByMaster(b) {
		r.callsBy[i] += n - by0[i]
	}
	dec, _ := r.h.Metric("ratelimit.rule.api.allowed")
	loads, _ := r.h.Metric("ratelimit.redis.slot_map_loads")
	r.decisions += dec - dec0
	r.mapLoads += loads - loads0
	r.res.Merge(res)
	return nil
}

func (r *clusterRun) run(d time.Duration) (*Result, error) {
	c := &loadConfig{name: strconv.Itoa(r.masters) + " masters", h: r.h, requests: r.requests, statuses: []int{200}}
	return c.run(d)
}

// redisTotals sums INFO cpu and FCALL's commandstats over the masters.
func (r *clusterRun) redisTotals(b *testing.B) (cpu time.Duration, calls, usec int64) {
	for _, s := range r.nodes {
		cpu += redisCPU(b, s)
		n, u, err := s.CommandUsec("fcall")
		if err != nil {
			b.Fatal(err)
		}
		calls, usec = calls+n, usec+u
	}
	return cpu, calls, usec
}

// callsByMaster is each master's FCALL count (INFO commandstats).
func (r *clusterRun) callsByMaster(b *testing.B) []int64 {
	out := make([]int64, len(r.nodes))
	for i, s := range r.nodes {
		n, _, err := s.CommandUsec("fcall")
		if err != nil {
			b.Fatal(err)
		}
		out[i] = n
	}
	return out
}

// check fails b unless the figures of r hold what the benchmark claims,
// with margins no machine's speed reaches: each decision is one FCALL on
// one master (plus a few epoch reads), and the measured calls are spread
// evenly over the masters (±10%; the users' slots are within ±5%).
func (r *clusterRun) check(b *testing.B) {
	if r.decisions == 0 {
		b.Fatalf("%d masters: no decision measured", r.masters)
	}
	if perDec := float64(r.fcalls) / float64(r.decisions); perDec < 0.99 || perDec > 1.05 {
		b.Errorf("%d masters: %d FCALLs for %d decisions; want one each", r.masters, r.fcalls, r.decisions)
	}
	even := r.fcalls / int64(r.masters)
	for i, n := range r.callsBy {
		if n < even*90/100 || n > even*110/100 {
			b.Errorf("%d masters: %d FCALLs on master %d of %v; want %d ±10%%", r.masters, n, i, r.callsBy, even)
		}
	}
}

// childrenNamed returns the ids of this process's children whose command
// is name (from /proc/<pid>/stat).
func childrenNamed(name string) map[int]bool {
	out := map[int]bool{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(data)
		open, shut := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || shut < open || s[open+1:shut] != name {
			continue
		}
		fields := strings.Fields(s[shut+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) {
			pid, _ := strconv.Atoi(strings.TrimSpace(s[:open]))
			out[pid] = true
		}
	}
	return out
}

// pidsCPU sums the user and system CPU time of processes (utime and
// stime of /proc/<pid>/stat, in clock ticks of 10 ms).
func pidsCPU(b *testing.B, pids []int) time.Duration {
	var ticks int64
	for _, pid := range pids {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			b.Fatal(err)
		}
		s := string(data)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		// fields[0] is state (field 3); utime and stime are fields 14 and 15.
		for _, f := range fields[11:13] {
			n, _ := strconv.ParseInt(f, 10, 64)
			ticks += n
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

func printClusterSummary(w io.Writer, runs []*clusterRun) {
	fmt.Fprintf(w, "\nRedis Cluster, stock build over a Webdis per master (redis.nodes): %d rounds of %v each, interleaved; %d connections, %d users.\n",
		loadRounds, loadSlice, loadConnections, clusterUsers)
	fmt.Fprintf(w, "Per decision: Redis CPU summed over the masters (INFO cpu), FCALL time (commandstats), Webdis CPU (/proc), this process's CPU (load + host + upstream).\n")
	fmt.Fprintf(w, "Idle Redis CPU is the masters' CPU over %v with no load (cluster bus, cron).\n", loadSlice)
	fmt.Fprintf(w, "%-8s %11s %9s %9s %14s %12s %15s %13s %12s %10s %13s  %s\n", "masters", "decisions/s", "p50", "p99",
		"Redis CPU/dec", "FCALL µs", "Webdis CPU/dec", "host CPU/dec", "calls/dec", "map loads", "idle Redis", "users, calls per master")
	for _, r := range runs {
		n := float64(r.decisions)
		fmt.Fprintf(w, "%-8d %11.0f %9s %9s %12.1fµs %12.2f %13.1fµs %11.1fµs %12.3f %10d %9.1fms/s  %v %v\n", r.masters,
			n/r.res.Elapsed.Seconds(), ms(r.res.Percentile(50)), ms(r.res.Percentile(99)),
			float64(r.redisCPU.Microseconds())/n, float64(r.fcallUsec)/float64(max(r.fcalls, 1)),
			float64(r.webdisCPU.Microseconds())/n, float64(r.hostCPU.Microseconds())/n, float64(r.fcalls)/n,
			r.mapLoads, float64(r.idleRedis.Microseconds())/1000/loadSlice.Seconds(), r.perMaster, r.callsBy)
	}
}
