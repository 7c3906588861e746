package wasmhost

import (
	"context"
	"fmt"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// Module is a compiled proxy-wasm filter with its own wazero runtime. Compile
// it once (compiling a Go filter takes a second or two) and start any number
// of Hosts from it, one after the other or at the same time.
type Module struct {
	runtime  wazero.Runtime
	compiled wazero.CompiledModule
	abi      ABIVersion

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

// Compile compiles a proxy-wasm module for a runtime that provides this
// package's WASI and "env" imports. As proxy-wasm-cpp-host does when it
// loads a module, it fails if the module exports no proxy_abi_version_*,
// or imports a function not linked for that ABI version (say
// proxy_get_log_level with 0.2.0) or for any CppHost. Start checks the
// WASI imports against its Config.CppHost.
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
	if err := instantiateWASI(ctx, r); err != nil {
		r.Close(ctx)
		return nil, err
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
	abi, err := moduleABIVersion(wasm)
	if err != nil {
		r.Close(ctx)
		return nil, fmt.Errorf("host: %w", err)
	}
	m := &Module{runtime: r, compiled: compiled, abi: abi}
	if err := m.link(CppHost94091cd); err != nil { // the widest WASI
		r.Close(ctx)
		return nil, fmt.Errorf("host: %w", err)
	}
	return m, nil
}

// ABIVersion is the proxy-wasm ABI version the module exports.
func (m *Module) ABIVersion() ABIVersion { return m.abi }

// Imports reports whether the module imports the function module.name,
// such as ("env", "proxy_redis_call"), which only a filter built for
// Higress's Envoy imports.
func (m *Module) Imports(module, name string) bool {
	for _, f := range m.compiled.ImportedFunctions() {
		if mod, n, _ := f.Import(); mod == module && n == name {
			return true
		}
	}
	return false
}

// link checks the module's imports as V8::link (src/v8/v8.cc) does: each
// must be a function the host links for the module's ABI version and for
// c, with the same signature.
func (m *Module) link(c CppHost) error {
	env, wasi := envFuncs(), wasiFuncs()
	envOK := envFuncsFor(m.abi)
	for _, f := range m.compiled.ImportedFunctions() {
		module, name, _ := f.Import()
		var params, results []api.ValueType
		found := false
		switch module {
		case "env":
			if hf, ok := env[name]; ok && envOK[name] {
				params, results, found = hf.params, hf.results(name), true
			}
		case "wasi_snapshot_preview1", "wasi_unstable":
			if wf, ok := wasi[name]; ok && wf.since <= c {
				params, results, found = wf.params(), wf.results(), true
			}
		}
		if !found {
			return missingImportError(module, name)
		}
		if !sameTypes(f.ParamTypes(), params) || !sameTypes(f.ResultTypes(), results) {
			return fmt.Errorf("Failed to load Wasm module due to an import type mismatch: %s.%s", module, name)
		}
	}
	return nil
}

func sameTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Close releases the runtime. Hosts started from the module must be closed
// first.
func (m *Module) Close(ctx context.Context) error {
	m.closeOnce.Do(func() { m.closeErr = m.runtime.Close(ctx) })
	return m.closeErr
}
