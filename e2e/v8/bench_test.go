package v8

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/dist"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// benchSpec is bench.mjs's input (see its header comment).
type benchSpec struct {
	Modules  []benchModule `json:"modules"`
	Headers  [][2]string   `json:"headers"`
	Requests int           `json:"requests"`
	Rounds   int           `json:"rounds"`
	// Slice: the requests of one module's turn (Requests if 0): the
	// modules take turns in slices until each has served Requests.
	Slice int `json:"slice,omitempty"`
	// Headline scenarios run HeadlineRounds rounds (at least Rounds).
	Headline       []string `json:"headline,omitempty"`
	HeadlineRounds int      `json:"headline_rounds,omitempty"`
	Warmup         int      `json:"warmup"`
	MemoryRequests int      `json:"memory_requests"`
	StartupVMs     int      `json:"startup_vms"`
	StartupOnly    string   `json:"startup_only,omitempty"`
	// StartupRuns: fresh processes timing each module's start-up, the
	// modules taking turns; the run of the median first VM is kept.
	StartupRuns int `json:"-"`
	// Streams: per scenario with a streamed response, the stream.
	Streams map[string]sseSpec `json:"streams,omitempty"`
	Scan    *scanSpec          `json:"scan,omitempty"`
	// Bodies: per scenario whose request has a body, the request.
	Bodies map[string]benchRequest `json:"bodies,omitempty"`
	// Scenarios, when set, are the only scenarios run (and admitted).
	Scenarios []string `json:"scenarios,omitempty"`
}

// benchRequest is a request with a body: its headers, then the body in one
// proxy_on_request_body call with end_of_stream.
type benchRequest struct {
	Headers [][2]string `json:"headers"`
	Body    string      `json:"body"`
}

// sseSpec is a chat completion streamed as OpenAI sends it (sseStream in
// bench.mjs): Events token events, or Bytes of them, then the usage event,
// in chunks of Chunk bytes.
type sseSpec struct {
	Events           int   `json:"events,omitempty"`
	Bytes            int   `json:"bytes,omitempty"`
	Chunk            int   `json:"chunk,omitempty"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

// scanSpec measures the cost of reading a stream per MiB: requests of
// Bytes of stream, for each chunk size, taking turns in Rounds.
type scanSpec struct {
	sseSpec
	Chunks   []int `json:"chunks"`
	Requests int   `json:"requests"`
	Rounds   int   `json:"rounds"`
	Warmup   int   `json:"warmup"`
}

type benchModule struct {
	Name     string `json:"name"`
	Wasm     string `json:"wasm"`
	RedisABI bool   `json:"redis_abi"`
	// HigressWASI: the WASI of Higress's host (wasi.mjs), for a module
	// whose Go runtime polls (the peer).
	HigressWASI   bool              `json:"higress_wasi,omitempty"`
	RedisClusters map[string]string `json:"redis_clusters,omitempty"`
	HTTPClusters  map[string]string `json:"http_clusters,omitempty"`
	Configs       map[string]string `json:"configs,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
}

// benchResults is bench.mjs's output.
type benchResults struct {
	V8      string                  `json:"v8"`
	Node    string                  `json:"node"`
	Flags   []string                `json:"flags"`
	Modules map[string]*benchResult `json:"modules"`
	// Streams: per scenario with a streamed response, its size.
	Streams map[string]struct {
		Bytes  int `json:"bytes"`
		Chunks int `json:"chunks"`
		Chunk  int `json:"chunk"`
	} `json:"streams"`
}

type benchResult struct {
	Scenarios map[string]*scenarioResult `json:"scenarios"`
	Scan      []scanResult               `json:"scan"`
	Startup   startupResult              `json:"startup"`
	// Size: the module's file, bytes (set by runBench).
	Size   int64 `json:"-"`
	Memory struct {
		AfterStart    int     `json:"after_start"`
		AfterWarmup   int     `json:"after_warmup"`
		AfterRequests int     `json:"after_requests"`
		Requests      int     `json:"requests"`
		WallMs        float64 `json:"wall_ms"`
	} `json:"memory"`
}

// startupResult times fresh VMs in a fresh process: the first compiles
// the module (lazily, as functions are first called); the next ones
// share its code, as Envoy's worker VMs do.
type startupResult struct {
	// FirstVMs: the first VM's start-up in each run, ms (medianStartup).
	FirstVMs  []float64 `json:"-"`
	CompileMs float64   `json:"compile_ms"`
	VMs       []struct {
		InstantiateMs float64 `json:"instantiate_ms"`
		StartMs       float64 `json:"start_ms"`
		Initialize    float64 `json:"initialize"`
		VMStart       float64 `json:"vm_start"`
		Configure     float64 `json:"configure"`
	} `json:"vms"`
}

type scenarioResult struct {
	CPUUs       float64   `json:"cpu_us"`
	CPUUsRounds []float64 `json:"cpu_us_rounds"`
	HostCalls   float64   `json:"host_calls"`
	// HostCallsByImport: per request, the host calls of each import
	// ("env.proxy_get_header_map_pairs"), in the last round.
	HostCallsByImport map[string]float64 `json:"host_calls_by_import"`
	GuestCalls        float64            `json:"guest_calls"`
	RedisCalls        float64            `json:"redis_calls"`
	GuestUs           float64            `json:"guest_us"`
	InHostUs          float64            `json:"in_host_us"`
	Statuses          map[string]int     `json:"statuses"`
	// Memory: the scenario's VM's linear memory after the rounds, bytes.
	Memory int `json:"memory"`
	// Streamed scenarios: the requests the VM served in all (recording
	// aside) and its metrics at the end.
	Served  int              `json:"served"`
	Metrics map[string]int64 `json:"metrics"`
}

// scanResult is one module's stream of one chunk size through one
// config: "scan" (response_cost: every chunk read) or "plain" (callbacks
// only).
type scanResult struct {
	Kind                 string    `json:"kind"`
	Chunk                int       `json:"chunk"`
	Bytes                int       `json:"bytes"`
	Chunks               int       `json:"chunks"`
	CPUUsPerMiB          float64   `json:"cpu_us_per_mib"`
	CPUUsPerMiBRounds    []float64 `json:"cpu_us_per_mib_rounds"`
	GuestUsPerMiB        float64   `json:"guest_us_per_mib"`
	InHostUsPerMiB       float64   `json:"in_host_us_per_mib"`
	HostCallsPerChunk    float64   `json:"host_calls_per_chunk"`
	RedisCallsPerRequest float64   `json:"redis_calls_per_request"`
}

// The scenarios, as bench.mjs names them, what each must answer and the
// Redis calls each request makes.
// benchModules are the no-op module and both builds, with a real Redis
// and a real Webdis to record replies from.
func benchModules(t testing.TB) []benchModule {
	dir, err := dist.Dir()
	if err == nil {
		_, err = dist.Read(dist.Noop)
	}
	if err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t)
	if base := os.Getenv("V8_BENCH_BASELINE"); base != "" {
		loadBaselineLibrary(t, srv, base)
	}
	prefix := redistest.Prefix(t)
	webdis := redistest.StartWebdis(t, srv.Addr)
	higress := func(name, wasm string) benchModule {
		return benchModule{Name: name, Wasm: wasm, RedisABI: true, RedisClusters: map[string]string{"redis": srv.Addr},
			Configs: benchConfigs(`"cluster":"redis"`, prefix+name+":")}
	}
	stock := func(name, wasm string) benchModule {
		return benchModule{Name: name, Wasm: wasm, HTTPClusters: map[string]string{"webdis": webdis},
			Configs: benchConfigs(fmt.Sprintf(`"transport":"webdis","cluster":"webdis","username":%q,"password":%q`,
				redistest.WebdisUser, redistest.WebdisPassword), prefix+name+":")}
	}
	return []benchModule{{Name: "no-op", Wasm: filepath.Join(dir, dist.Noop)}, higress("higress", higressWasm), stock("stock", stockWasm)}
}

// runBench runs bench.mjs in node with Envoy's V8 flags.
func runBench(t testing.TB, s benchSpec, timeout time.Duration) benchResults {
	t.Helper()
	stdout, stderr, err := runNode(t, "bench.mjs", s, timeout)
	if err != nil {
		t.Fatalf("bench.mjs: %v\n%s", err, tail(stderr, 40))
	}
	var r benchResults
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("bench.mjs output: %v\n%s", err, stdout)
	}
	runs := map[string][]startupResult{}
	for range max(s.StartupRuns, 1) {
		for _, mod := range s.Modules {
			s.StartupOnly = mod.Name
			runs[mod.Name] = append(runs[mod.Name], runStartup(t, s, timeout))
		}
	}
	for _, mod := range s.Modules {
		m := r.Modules[mod.Name]
		m.Startup = medianStartup(runs[mod.Name])
		if fi, err := os.Stat(mod.Wasm); err == nil {
			m.Size = fi.Size()
		}
	}
	return r
}

// medianStartup is the run whose first VM's start-up is the median, with
// every run's first VM in FirstVMs.
func medianStartup(runs []startupResult) startupResult {
	first := func(r startupResult) float64 { return r.CompileMs + r.VMs[0].InstantiateMs + r.VMs[0].StartMs }
	sorted := slices.SortedFunc(slices.Values(runs), func(a, b startupResult) int { return cmp.Compare(first(a), first(b)) })
	m := sorted[len(sorted)/2]
	for _, r := range runs {
		m.FirstVMs = append(m.FirstVMs, first(r))
	}
	return m
}

// runStartup times a module's start-up in a node process of its own.
func runStartup(t testing.TB, s benchSpec, timeout time.Duration) startupResult {
	t.Helper()
	out, _, err := runNode(t, "bench.mjs", s, timeout)
	var r struct{ Startup startupResult }
	if err == nil {
		err = json.Unmarshal([]byte(out), &r)
	}
	if err != nil {
		t.Fatalf("bench.mjs start-up of %s: %v\n%s", s.StartupOnly, err, out)
	}
	return r.Startup
}

var benchHeaders = [][2]string{{":method", "GET"}, {":path", "/api/orders"}, {":authority", "api.example.com"},
	{":scheme", "https"}, {"user-agent", "bench/1.0"}, {"accept", "*/*"}, {"x-user", "alice"}}

// The benchmark's harness measures what it says: with few requests, every
// module answers each scenario as it must, the deny cache spares Redis
// every call, a streamed response whose usage differs from the
// reservation adds one settle call (whose reply the filter reads: the
// refund is counted) and one whose usage equals it adds none, a price
// table prices the usage, a body key reads the body, the scan
// reads every chunk only under response_cost, and the no-op module makes
// no host call.
func TestV8BenchScenarios(t *testing.T) {
	r := runBench(t, benchSpec{Modules: benchModules(t), Headers: benchHeaders,
		Requests: 200, Rounds: 2, Warmup: 100, MemoryRequests: 1000, StartupVMs: 1,
		Streams: benchStreams, Scan: benchScan(128<<10, 2, 2, 1), Bodies: benchBodies}, hostTimeout)
	var table strings.Builder
	printBench(&table, r)
	t.Log(table.String())
	for name, m := range r.Modules {
		for _, sc := range benchScenarios {
			got := m.Scenarios[sc.name]
			if got == nil {
				t.Fatalf("%s: no %s result", name, sc.name)
			}
			want := sc.status
			if name == "no-op" {
				want = "200"
			}
			if got.Statuses[want] != 400 || len(got.Statuses) != 1 {
				t.Errorf("%s %s: statuses %v, want 400 × %s", name, sc.name, got.Statuses, want)
			}
			wantCalls := sc.redisCalls
			if name == "no-op" {
				wantCalls = 0
			}
			if got.RedisCalls != wantCalls {
				t.Errorf("%s %s: %.2f Redis calls per request, want %.0f", name, sc.name, got.RedisCalls, wantCalls)
			}
			if got.CPUUs <= 0 || got.GuestCalls < 6 {
				t.Errorf("%s %s: %.2f µs of CPU and %.1f guest calls per request; want both measured", name, sc.name, got.CPUUs, got.GuestCalls)
			}
		}
		if m.Memory.Requests < 1000 || m.Memory.AfterRequests < m.Memory.AfterStart || len(m.Startup.VMs) != 1 {
			t.Errorf("%s: memory %+v, %d start-ups; want 1000 requests served and a start-up timed", name, m.Memory, len(m.Startup.VMs))
		}
		if name == "no-op" {
			continue
		}
		// The settle replies were read: every request refunded (the
		// recorded reply's refund, at least a unit), none charged more,
		// none failed; with the cost equal to the reservation, nothing.
		llm, exact := m.Scenarios["llm"], m.Scenarios["llm_exact"]
		metric := func(s *scenarioResult, event string) int64 { return s.Metrics["ratelimit.rule.llm."+event] }
		if metric(llm, "units_refunded") < int64(llm.Served) || metric(llm, "units_charged") != 0 ||
			llm.Metrics["ratelimit.settle.errors"] != 0 || metric(llm, "usage_missing") != 0 {
			t.Errorf("%s llm: %d requests served, metrics %v; want units_refunded >= the requests, no charge, no settle error, no usage missing",
				name, llm.Served, llm.Metrics)
		}
		if metric(exact, "units_refunded") != 0 || metric(exact, "units_charged") != 0 || metric(exact, "usage_missing") != 0 {
			t.Errorf("%s llm_exact: metrics %v; want nothing refunded or charged, no usage missing", name, exact.Metrics)
		}
		// The price table priced the usage: each refund is the
		// reservation of 500 output tokens at $10/M less 150 × $2.50/M
		// + 100 × $10/M, in micro-dollars (unpriced, it would be 250).
		priced := m.Scenarios["llm_priced"]
		if metric(priced, "units_refunded") < 3625*int64(priced.Served) || metric(priced, "units_charged") != 0 ||
			priced.Metrics["ratelimit.settle.errors"] != 0 || metric(priced, "usage_missing") != 0 {
			t.Errorf("%s llm_priced: %d requests served, metrics %v; want units_refunded >= 3625 × the requests, no charge, no settle error, no usage missing",
				name, priced.Served, priced.Metrics)
		}
		// The body was read: without its model the rule would be skipped
		// (no Redis call, counted above) and no body bytes fetched.
		if got := m.Scenarios["body_key"].HostCallsByImport["env.proxy_get_buffer_bytes"]; got < 1 {
			t.Errorf("%s body_key: %.1f proxy_get_buffer_bytes calls per request, want the body read", name, got)
		}
		if len(m.Scan) != 4 {
			t.Fatalf("%s: %d scan results, want scan and plain for 2 chunk sizes", name, len(m.Scan))
		}
		for _, s := range m.Scan {
			reads := map[string]bool{"scan": true, "plain": false}[s.Kind]
			if s.CPUUsPerMiB <= 0 || s.GuestUsPerMiB <= 0 || (s.HostCallsPerChunk >= 1) != reads || s.RedisCallsPerRequest != 1 {
				t.Errorf("%s scan %+v: want CPU and guest time measured, %s, and 1 Redis call per request (no settle)",
					name, s, map[bool]string{true: "the chunks read (a host call per chunk at least)", false: "no host call per chunk"}[reads])
			}
		}
	}
	if got := r.Modules["no-op"].Scenarios["admitted"].HostCalls; got != 0 {
		t.Errorf("no-op module: %.1f host calls per request, want 0", got)
	}
}

// BenchmarkV8 is `make bench`'s V8 table: the no-op module and both builds
// (with $V8_BENCH_BASELINE's and $V8_BENCH_PEER's modules) taking turns
// of benchSlice requests in one node process with Envoy's V8 flags. Run it with
// -benchtime 1x; one iteration is the whole comparison (several minutes).
func BenchmarkV8(b *testing.B) {
	for range b.N {
		r := runBench(b, benchSpec{Modules: peerModules(baselineModules(benchModules(b))), Headers: benchHeaders,
			Requests: 20_000, Rounds: 7, Slice: benchSlice, Headline: headlineScenarios, HeadlineRounds: headlineRounds, Warmup: 20_000, MemoryRequests: memoryRequests(b), StartupVMs: 3, StartupRuns: 5,
			Streams: benchStreams, Scan: benchScan(1<<20, 10, 7, 5), Bodies: benchBodies}, 30*time.Minute)
		printBench(os.Stdout, r)
		printGuard(os.Stdout, r, os.Getenv("V8_BENCH_BASELINE"))
		noop := r.Modules["no-op"].Scenarios
		for _, name := range []string{"higress", "stock"} {
			for _, sc := range benchScenarios {
				b.ReportMetric(r.Modules[name].Scenarios[sc.name].CPUUs/noop[sc.name].CPUUs, name+"-"+sc.name+"-x-noop")
			}
			for chunk, s := range scanCosts(r.Modules[name]) {
				b.ReportMetric(s[0]-s[1], fmt.Sprintf("%s-scan-%dKiB-us/MiB", name, chunk>>10))
			}
		}
	}
}
