package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/redisrate/envoy-redis-ratelimit/e2e/bench/fixture"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// The variants, in the order they run. native is filter.Plugin called
// directly; wasm_logic is the same Go code compiled to wasm and looping
// inside the guest (testdata/logic: no ABI). The others run in a
// wasmhost.BenchVM: wasm_* are compiled with wasmhost.WithoutTermination and
// called without a watchdog (the guest and the ABI, nothing else);
// checked_filter adds wazero's termination checks to the compiled code;
// host_* add the per-call watchdog goroutine too, which is how the e2e
// Host runs every guest call.
var requestVariants = []string{"native", "wasm_logic", "wasm_noop", "wasm_filter", "checked_filter", "host_noop", "host_filter"}

// requestRunners prepares one runner per variant; a runner runs a few
// requests and returns how many.
func requestRunners(b *testing.B) map[string]func() int {
	b.Helper()
	m := modules(b)
	reply := fixture.Reply()
	native, err := fixture.NewNative()
	if err != nil {
		b.Fatal(err)
	}
	logic := newLogic(b, m.LogicWasm)
	wasm := func(vm *wasmhost.BenchVM, variant string, reply []byte) func() int {
		return func() int {
			if status, err := vm.Request(fixture.Headers, reply); err != nil || status != 200 {
				b.Fatalf("%s: %d, %v", variant, status, err)
			}
			return 1
		}
	}
	watchdog := wasmhost.WithWatchdog()
	return map[string]func() int{
		"native": func() int {
			if err := native.Request(); err != nil {
				b.Fatal(err)
			}
			return 1
		},
		"wasm_logic":     func() int { return logic.run(b, 16) },
		"wasm_noop":      wasm(benchVM(b, m.NoopNoCheck, ""), "wasm_noop", nil),
		"wasm_filter":    wasm(benchVM(b, m.FilterNoCheck, fixture.Config), "wasm_filter", reply),
		"checked_filter": wasm(benchVM(b, m.Filter, fixture.Config), "checked_filter", reply),
		"host_noop":      wasm(benchVM(b, m.Noop, "", watchdog), "host_noop", nil),
		"host_filter":    wasm(benchVM(b, m.Filter, fixture.Config, watchdog), "host_filter", reply),
	}
}

// logic is testdata/logic instantiated in its own wazero runtime,
// compiled as wasmhost.WithoutTermination compiles, with real clocks.
type logic struct {
	rt  wazero.Runtime
	run func(b *testing.B, n int) int
}

func newLogic(b *testing.B, wasm []byte) *logic {
	b.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	b.Cleanup(func() { rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	mod, err := rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().
		WithStartFunctions("_initialize").WithSysWalltime().WithSysNanotime().WithRandSource(rand.Reader))
	if err != nil {
		b.Fatal(err)
	}
	fn := mod.ExportedFunction("run")
	return &logic{rt: rt, run: func(b *testing.B, n int) int {
		res, err := fn.Call(ctx, uint64(n))
		if err != nil || int32(res[0]) != 0 {
			b.Fatalf("wasm_logic: %v, %d failed", err, int32(res[0]))
		}
		return n
	}}
}

// BenchmarkRequest is one allowed request (request headers, one Redis
// call answered with a canned reply, decision, response headers, stream
// end): natively (filter.Plugin called directly, as
// filter.BenchmarkRequest does), and in one wasm VM of the e2e host
// (wasmhost.BenchVM: the real ABI, no HTTP, no TCP, no Redis) for the filter
// and the no-op filter, compiled and called in the ways requestVariants
// lists. Each sub-benchmark runs on its own; for the ratios, see
// BenchmarkRequestSideBySide.
func BenchmarkRequest(b *testing.B) {
	runners := requestRunners(b)
	for _, v := range requestVariants {
		run := runners[v]
		b.Run(v, func(b *testing.B) {
			b.ReportAllocs()
			for n := 0; n < b.N; {
				n += run()
			}
		})
	}
}

// Side-by-side results, for the summary TestMain prints.
var (
	requestMu     sync.Mutex
	requestRounds []map[string]float64 // ns per request, per round and variant
	requestCalls  string               // host calls per request, formatted
	guestCalls    float64              // host -> guest calls per filter request
)

const (
	sideRounds = 12
	sideSlice  = 150 * time.Millisecond // per variant per round
)

// BenchmarkRequestSideBySide runs the variants of BenchmarkRequest in turn,
// in short slices over several rounds, so that a noisy neighbour slows
// them alike; the summary gives the medians and the median of each
// round's ratios. One iteration is the whole comparison (it takes about
// ten seconds, so the default -benchtime runs it once). It also counts
// the calls between host and guest one request makes.
func BenchmarkRequestSideBySide(b *testing.B) {
	m := modules(b)
	requestCalls, guestCalls = countHostCalls(b, m, fixture.Reply())
	runners := requestRunners(b)
	for _, v := range requestVariants { // warm up
		for n := 0; n < 1000; {
			n += runners[v]()
		}
	}
	b.ResetTimer()
	for range b.N {
		requestMu.Lock()
		requestRounds = nil
		requestMu.Unlock()
		for range sideRounds {
			round := map[string]float64{}
			for _, v := range requestVariants {
				run := runners[v]
				n := 0
				start := time.Now()
				for time.Since(start) < sideSlice {
					for range 16 {
						n += run()
					}
				}
				round[v] = float64(time.Since(start).Nanoseconds()) / float64(n)
			}
			requestMu.Lock()
			requestRounds = append(requestRounds, round)
			requestMu.Unlock()
		}
	}
	med := requestMedians()
	for _, v := range requestVariants {
		b.ReportMetric(med[v], v+"-ns/req")
	}
	b.ReportMetric(med["wasm_filter/native"], "wasm/native")
	b.ReportMetric(med["(wasm_filter-wasm_noop)/native"], "(wasm-noop)/native")
	b.ReportMetric(med["host_filter/native"], "host/native")
}

// requestMedians returns per variant the median ns/request over the
// rounds, and the medians of the rounds' ratios.
func requestMedians() map[string]float64 {
	requestMu.Lock()
	defer requestMu.Unlock()
	col := map[string][]float64{}
	for _, r := range requestRounds {
		for v, ns := range r {
			col[v] = append(col[v], ns)
		}
		ratio := func(name string, x float64) { col[name] = append(col[name], x) }
		ratio("wasm_logic/native", r["wasm_logic"]/r["native"])
		ratio("wasm_filter/native", r["wasm_filter"]/r["native"])
		ratio("(wasm_filter-wasm_noop)/native", (r["wasm_filter"]-r["wasm_noop"])/r["native"])
		ratio("wasm_filter-wasm_noop", r["wasm_filter"]-r["wasm_noop"])
		ratio("host_filter/native", r["host_filter"]/r["native"])
		ratio("(host_filter-host_noop)/native", (r["host_filter"]-r["host_noop"])/r["native"])
		ratio("host_filter-host_noop", r["host_filter"]-r["host_noop"])
		ratio("checked_filter/wasm_filter", r["checked_filter"]/r["wasm_filter"])
		ratio("host_filter-checked_filter", r["host_filter"]-r["checked_filter"])
	}
	med := map[string]float64{}
	for k, xs := range col {
		med[k] = median(xs)
	}
	return med
}

func benchVM(b *testing.B, mod *wasmhost.Module, config string, opts ...wasmhost.BenchOption) *wasmhost.BenchVM {
	b.Helper()
	vm, err := wasmhost.NewBenchVM(context.Background(), wasmhost.Config{
		Module:        mod,
		PluginConfig:  []byte(config),
		RedisClusters: map[string]string{"redis": "127.0.0.1:1"}, // never dialled
	}, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { vm.Close() })
	return vm
}

// countHostCalls runs requests through modules compiled with call counting
// and formats the calls per request.
func countHostCalls(b *testing.B, m *Modules, reply []byte) (string, float64) {
	b.Helper()
	const n = 1000
	var out strings.Builder
	var exports float64
	for _, c := range []struct {
		name   string
		wasm   []byte
		config string
		reply  []byte
	}{{"wasm_filter", m.FilterWasm, fixture.Config, reply}, {"wasm_noop", m.NoopWasm, "", nil}} {
		ctx := context.Background()
		mod, counter, err := wasmhost.CompileCounting(ctx, c.wasm, "runtime.mallocgc", "runtime.gcStart")
		if err != nil {
			b.Fatal(err)
		}
		vm, err := wasmhost.NewBenchVM(ctx, wasmhost.Config{Module: mod, PluginConfig: []byte(c.config),
			RedisClusters: map[string]string{"redis": "127.0.0.1:1"}})
		if err != nil {
			b.Fatal(err)
		}
		for range 10 { // warm: the first requests allocate
			vm.Request(fixture.Headers, c.reply)
		}
		counter.Reset()
		for range n {
			if status, err := vm.Request(fixture.Headers, c.reply); err != nil || status != 200 {
				b.Fatalf("%s: %d, %v", c.name, status, err)
			}
		}
		fmt.Fprintf(&out, "%s, calls per request:\n%s", c.name, counter.Table(n))
		if c.name == "wasm_filter" {
			for name, k := range counter.Counts() {
				if strings.HasPrefix(name, "export.") {
					exports += float64(k) / n
				}
			}
		}
		vm.Close()
		mod.Close(ctx)
	}
	return out.String(), exports
}

// printRequestSummary prints the medians and ratios of
// BenchmarkRequestSideBySide.
func printRequestSummary(w io.Writer) {
	requestMu.Lock()
	rounds := len(requestRounds)
	requestMu.Unlock()
	if rounds == 0 {
		return
	}
	med := requestMedians()
	fmt.Fprintf(w, "\nFilter CPU per request, side by side (%d rounds of %v per variant; medians):\n", rounds, sideSlice)
	for _, v := range requestVariants {
		fmt.Fprintf(w, "  %-22s %10s\n", v, us(med[v]))
	}
	fmt.Fprintf(w, "  wasm_logic / native:                   %7.2fx   (Go compiled to wasm, no ABI)\n", med["wasm_logic/native"])
	fmt.Fprintf(w, "  wasm_filter / native:                  %7.2fx\n", med["wasm_filter/native"])
	fmt.Fprintf(w, "  wasm_filter - wasm_noop:               %s\n", us(med["wasm_filter-wasm_noop"]))
	fmt.Fprintf(w, "  (wasm_filter - wasm_noop) / native:    %7.2fx   (target <= 10x)\n", med["(wasm_filter-wasm_noop)/native"])
	fmt.Fprintf(w, "  host_filter / native:                  %7.2fx\n", med["host_filter/native"])
	fmt.Fprintf(w, "  (host_filter - host_noop) / native:    %7.2fx\n", med["(host_filter-host_noop)/native"])
	fmt.Fprintf(w, "  termination checks: checked_filter / wasm_filter = %.2fx\n", med["checked_filter/wasm_filter"])
	if guestCalls > 0 {
		fmt.Fprintf(w, "  watchdog: host_filter - checked_filter = %s per request, %s per host->guest call (%.0f calls)\n",
			us(med["host_filter-checked_filter"]), us(med["host_filter-checked_filter"]/guestCalls), guestCalls)
	}
	if requestCalls != "" {
		fmt.Fprintf(w, "\nCalls per request across the host/guest boundary (modules compiled with a counting listener):\n%s", requestCalls)
	}
}
