package host

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// Module is a compiled proxy-wasm filter with its own wazero runtime. Compile
// it once (compiling a Go filter takes a second or two) and start any number
// of Hosts from it, one after the other or at the same time.
type Module struct {
	runtime  wazero.Runtime
	compiled wazero.CompiledModule

	closeOnce sync.Once
	closeErr  error
}

// CompileOption configures Compile.
type CompileOption func(*compileOptions)

type compileOptions struct {
	cacheDir      string
	noTermination bool
}

// WithCacheDir keeps wazero's compiled code in dir, so that compiling the
// same .wasm again (in the next test run, say) is fast.
func WithCacheDir(dir string) CompileOption {
	return func(o *compileOptions) { o.cacheDir = dir }
}

// WithoutTermination compiles without wazero's WithCloseOnContextDone.
// Guest code then runs several times faster (wazero no longer checks for
// termination in compiled code, nor starts a goroutine per guest call),
// but closing a Host no longer aborts a guest call in progress: a guest
// that never returns hangs Close. For benchmarks (e2e/bench).
func WithoutTermination() CompileOption {
	return func(o *compileOptions) { o.noTermination = true }
}

// Compile compiles a proxy-wasm module for a runtime that provides WASI and
// this package's "env" imports. It fails if the module imports an "env"
// function that the host does not provide.
func Compile(ctx context.Context, wasm []byte, opts ...CompileOption) (*Module, error) {
	var o compileOptions
	for _, opt := range opts {
		opt(&o)
	}
	cfg := wazero.NewRuntimeConfig().WithCloseOnContextDone(!o.noTermination)
	if o.cacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(o.cacheDir)
		if err != nil {
			return nil, fmt.Errorf("host: compilation cache %s: %w", o.cacheDir, err)
		}
		cfg = cfg.WithCompilationCache(cache)
	}
	r := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		r.Close(ctx)
		return nil, fmt.Errorf("host: instantiate WASI: %w", err)
	}
	if err := instantiateEnv(ctx, r); err != nil {
		r.Close(ctx)
		return nil, err
	}
	compiled, err := r.CompileModule(ctx, wasm)
	if err != nil {
		r.Close(ctx)
		return nil, fmt.Errorf("host: compile: %w", err)
	}
	provided := envFuncs()
	var missing []string
	for _, f := range compiled.ImportedFunctions() {
		module, name, _ := f.Import()
		if _, ok := provided[name]; module == "env" && !ok {
			missing = append(missing, "env."+name)
		}
	}
	if len(missing) > 0 {
		r.Close(ctx)
		return nil, fmt.Errorf("host: module imports functions this host does not provide: %s", strings.Join(missing, ", "))
	}
	return &Module{runtime: r, compiled: compiled}, nil
}

// Close releases the runtime. Hosts started from the module must be closed
// first.
func (m *Module) Close(ctx context.Context) error {
	m.closeOnce.Do(func() { m.closeErr = m.runtime.Close(ctx) })
	return m.closeErr
}
