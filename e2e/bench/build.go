// Package bench measures the filter end to end: its CPU per request in a
// wasm VM against the same logic natively and against a no-op filter
// (BenchmarkRequest), and throughput, latency and Redis calls per request
// through the wazero host with a real redis-server (BenchmarkThroughput).
// It also holds the HTTP load generator those benchmarks and the burst
// plot (e2e/cmd/plot) use. `make bench` runs everything and prints the
// ratios; BENCHMARKS.md records a run.
//
// Only Benchmark functions measure; `go test ./...` runs the load
// generator's own tests and nothing slow.
package bench

import (
	"context"

	"github.com/redisrate/envoy-redis-ratelimit/internal/dist"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// Modules are the wasm modules the benchmarks compare, compiled.
type Modules struct {
	// Filter is the Higress build of the filter (Redis callout ABI), Noop
	// the no-op filter of wasmhost/testdata/noop, both compiled as wasmhost.Compile
	// does by default, with wazero's termination checks. FilterNoCheck and
	// NoopNoCheck are the same compiled with wasmhost.WithoutTermination.
	Filter, Noop               *wasmhost.Module
	FilterNoCheck, NoopNoCheck *wasmhost.Module
	FilterWasm, NoopWasm       []byte
	// LogicWasm is testdata/logic: the filter's logic alone in wasm.
	LogicWasm []byte
}

// BuildModules compiles the filter and the no-op filter that `make build
// fixtures` wrote to dist/, with wazero's compilation cache in dist/cache.
func BuildModules(ctx context.Context) (*Modules, error) {
	m := &Modules{}
	var err error
	if m.FilterWasm, err = dist.Read(dist.Higress); err != nil {
		return nil, err
	}
	if m.NoopWasm, err = dist.Read(dist.Noop); err != nil {
		return nil, err
	}
	if m.LogicWasm, err = dist.Read(dist.Logic); err != nil {
		return nil, err
	}
	dir, err := dist.CacheDir()
	if err != nil {
		return nil, err
	}
	cache := wasmhost.WithCacheDir(dir)
	for _, c := range []struct {
		dst  **wasmhost.Module
		wasm []byte
		opts []wasmhost.CompileOption
	}{
		{&m.Filter, m.FilterWasm, []wasmhost.CompileOption{cache}},
		{&m.Noop, m.NoopWasm, []wasmhost.CompileOption{cache}},
		{&m.FilterNoCheck, m.FilterWasm, []wasmhost.CompileOption{cache, wasmhost.WithoutTermination()}},
		{&m.NoopNoCheck, m.NoopWasm, []wasmhost.CompileOption{cache, wasmhost.WithoutTermination()}},
	} {
		if *c.dst, err = wasmhost.Compile(ctx, c.wasm, c.opts...); err != nil {
			m.Close(ctx)
			return nil, err
		}
	}
	return m, nil
}

// Close releases the modules.
func (m *Modules) Close(ctx context.Context) {
	for _, mod := range []*wasmhost.Module{m.Filter, m.Noop, m.FilterNoCheck, m.NoopNoCheck} {
		if mod != nil {
			mod.Close(ctx)
		}
	}
}
