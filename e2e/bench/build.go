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
	"os"
	"path/filepath"

	"github.com/redisrate/envoy-redis-ratelimit/e2e/host"
	"github.com/redisrate/envoy-redis-ratelimit/internal/wasmbuild"
)

// ModuleRoot returns the directory of this Go module (where go.mod is).
func ModuleRoot() (string, error) { return wasmbuild.ModuleRoot() }

// BuildWasm builds the package in pkgDir (relative to the module root) as
// `make build` builds the filter: GOOS=wasip1 GOARCH=wasm,
// -buildmode=c-shared, with the given build tags. It returns the module.
func BuildWasm(pkgDir, tags string) ([]byte, error) { return wasmbuild.Build(pkgDir, tags) }

// Modules are the wasm modules the benchmarks compare, compiled.
type Modules struct {
	// Filter is the Higress build of the filter (Redis callout ABI), Noop
	// the no-op filter of e2e/testdata/noop, both compiled as host.Compile
	// does by default, with wazero's termination checks. FilterNoCheck and
	// NoopNoCheck are the same compiled with host.WithoutTermination.
	Filter, Noop               *host.Module
	FilterNoCheck, NoopNoCheck *host.Module
	FilterWasm, NoopWasm       []byte
	// LogicWasm is testdata/logic: the filter's logic alone in wasm.
	LogicWasm []byte
}

// BuildModules builds and compiles the filter and the no-op filter, with
// a wazero compilation cache in the temporary directory.
func BuildModules(ctx context.Context) (*Modules, error) {
	m := &Modules{}
	var err error
	if m.FilterWasm, err = BuildWasm(".", "higress"); err != nil {
		return nil, err
	}
	if m.NoopWasm, err = BuildWasm(filepath.Join("e2e", "testdata", "noop"), ""); err != nil {
		return nil, err
	}
	if m.LogicWasm, err = BuildWasm(filepath.Join("e2e", "bench", "testdata", "logic"), ""); err != nil {
		return nil, err
	}
	cache := host.WithCacheDir(filepath.Join(os.TempDir(), "e2e-bench-wazero-cache"))
	for _, c := range []struct {
		dst  **host.Module
		wasm []byte
		opts []host.CompileOption
	}{
		{&m.Filter, m.FilterWasm, []host.CompileOption{cache}},
		{&m.Noop, m.NoopWasm, []host.CompileOption{cache}},
		{&m.FilterNoCheck, m.FilterWasm, []host.CompileOption{cache, host.WithoutTermination()}},
		{&m.NoopNoCheck, m.NoopWasm, []host.CompileOption{cache, host.WithoutTermination()}},
	} {
		if *c.dst, err = host.Compile(ctx, c.wasm, c.opts...); err != nil {
			m.Close(ctx)
			return nil, err
		}
	}
	return m, nil
}

// Close releases the modules.
func (m *Modules) Close(ctx context.Context) {
	for _, mod := range []*host.Module{m.Filter, m.Noop, m.FilterNoCheck, m.NoopNoCheck} {
		if mod != nil {
			mod.Close(ctx)
		}
	}
}
