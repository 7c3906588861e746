package wasmhost_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

func compile(t *testing.T, m *wasmModule) (*wasmhost.Module, error) {
	t.Helper()
	mod, err := wasmhost.Compile(context.Background(), m.bytes())
	if err == nil {
		t.Cleanup(func() { mod.Close(context.Background()) })
	}
	return mod, err
}

// startModule starts a host of m and returns Start's error (nil if it
// started; the host is then closed at the end of the test).
func startModule(t *testing.T, m *wasmModule, cpp wasmhost.CppHost, pluginConfig string) error {
	t.Helper()
	mod, err := compile(t, m)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	h, err := wasmhost.Start(context.Background(), wasmhost.Config{Module: mod, Upstream: newUpstream(t).URL,
		Workers: 1, CppHost: cpp, PluginConfig: []byte(pluginConfig)})
	if err == nil {
		t.Cleanup(func() { h.Close() })
	}
	return err
}

func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("unexpected error: %v", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("error %v, want one containing %q", err, want)
	}
}

// Which host functions exist depends on the ABI version the module exports
// (proxy-wasm-cpp-host WasmBase::registerCallbacks), and a missing one fails
// the load (V8::link), whether the module calls it or not.
func TestLinkFollowsTheABIVersion(t *testing.T) {
	missing := "Failed to load Wasm module due to a missing import: "
	for _, tc := range []struct {
		name    string
		abi     string
		imports []string
		extra   []wasmFunc
		want    string
	}{
		{"get_log_level needs 0.2.1", "0.2.0", []string{"env.proxy_get_log_level:i>i"}, nil, missing + "env.proxy_get_log_level"},
		{"get_log_level in 0.2.1", "0.2.1", []string{"env.proxy_get_log_level:i>i"}, nil, ""},
		{"continue_request only in 0.1.0", "0.2.0", []string{"env.proxy_continue_request:>i"}, nil, missing + "env.proxy_continue_request"},
		{"0.1.0 has continue_request and get_configuration", "0.1.0",
			[]string{"env.proxy_continue_request:>i", "env.proxy_get_configuration:ii>i"}, nil, ""},
		{"0.1.0 lacks continue_stream", "0.1.0", []string{"env.proxy_continue_stream:i>i"}, nil, missing + "env.proxy_continue_stream"},
		{"no ABI version", "", nil, nil, "Missing or unknown Proxy-Wasm ABI version"},
		{"unknown function", "0.2.0", []string{"env.proxy_no_such:>i"}, nil, missing + "env.proxy_no_such"},
		{"wrong signature", "0.2.0", []string{"env.proxy_log:i>i"}, nil, "import type mismatch: env.proxy_log"},
		{"WASI's path_link is not cpp-host's", "0.2.0", []string{"wasi_snapshot_preview1.path_link:iiiiiii>i"}, nil,
			"import type mismatch: wasi_snapshot_preview1.path_link"},
		{"first ABI export wins (0.2.1)", "0.2.1", []string{"env.proxy_get_log_level:i>i"},
			[]wasmFunc{{export: "proxy_abi_version_0_2_0"}}, ""},
		{"first ABI export wins (0.2.0)", "0.2.0", []string{"env.proxy_get_log_level:i>i"},
			[]wasmFunc{{export: "proxy_abi_version_0_2_1"}}, missing + "env.proxy_get_log_level"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := compile(t, minimalFilter(tc.abi, tc.imports, tc.extra...))
			wantErr(t, err, tc.want)
		})
	}
}

// The WASI functions 94091cd added are missing before it.
func TestWASIFunctionsDependOnTheCppHost(t *testing.T) {
	m := minimalFilter("0.2.0", []string{"wasi_snapshot_preview1.clock_res_get:ii>i"})
	wantErr(t, startModule(t, m, wasmhost.CppHostBefore94091cd, ""),
		"Failed to load Wasm module due to a missing import: wasi_snapshot_preview1.clock_res_get")
	wantErr(t, startModule(t, m, wasmhost.CppHost94091cd, ""), "")
}

// _initialize and proxy_on_memory_allocate may call only the host functions
// proxy-wasm-cpp-host allows there; anything else traps with
// restricted_callback and the VM (here the canary) fails to start.
func TestRestrictedCallsTrap(t *testing.T) {
	wasi := []string{
		"wasi_snapshot_preview1.poll_oneoff:iiii>i", "wasi_snapshot_preview1.sched_yield:>i",
		"wasi_snapshot_preview1.random_get:ii>i", "wasi_snapshot_preview1.fd_fdstat_get:ii>i",
		"wasi_snapshot_preview1.fd_write:iiii>i", "env.proxy_log:iii>i", "env.proxy_get_property:iiii>i",
		"env.proxy_get_buffer_bytes:iiiii>i",
	}
	initCalling := func(calls ...func(m *wasmModule) []byte) wasmFunc {
		return wasmFunc{export: "_initialize", body: func(m *wasmModule) []byte {
			var b []byte
			for _, c := range calls {
				b = append(b, c(m)...)
			}
			return b
		}}
	}
	call := func(name string, args ...int32) func(m *wasmModule) []byte {
		return func(m *wasmModule) []byte { return m.call(name, args...) }
	}
	mallocCalling := func(name string, args ...int32) wasmFunc {
		return wasmFunc{export: "proxy_on_memory_allocate", params: sig("i"), results: sig("i"),
			body: func(m *wasmModule) []byte { return append(m.call(name, args...), i32Const(1024)...) }}
	}
	// proxy_on_configure reads the plugin configuration, so that the host
	// runs the allocator.
	configure := wasmFunc{export: "proxy_on_configure", params: sig("ii"), results: sig("i"),
		body: func(m *wasmModule) []byte {
			return append(m.call("env.proxy_get_buffer_bytes", 7, 0, 100, 0, 4), i32Const(1)...)
		}}
	const (
		pre  = wasmhost.CppHostBefore94091cd
		post = wasmhost.CppHost94091cd
	)
	restricted := func(fn, phase string) string {
		return "restricted_callback: " + fn + " called during " + phase
	}
	for _, tc := range []struct {
		name  string
		cpp   wasmhost.CppHost
		funcs []wasmFunc
		want  string
	}{
		{"init: allowed calls", pre, []wasmFunc{initCalling(call("wasi_snapshot_preview1.random_get", 16, 8),
			call("wasi_snapshot_preview1.fd_fdstat_get", 1, 64), call("wasi_snapshot_preview1.fd_write", 1, 0, 0, 8),
			call("env.proxy_log", 2, 0, 0))}, ""},
		{"init: sched_yield", pre, []wasmFunc{initCalling(call("wasi_snapshot_preview1.sched_yield"))},
			restricted("wasi_snapshot_preview1.sched_yield", "_initialize")},
		{"init: sched_yield after 94091cd", post, []wasmFunc{initCalling(call("wasi_snapshot_preview1.sched_yield"))},
			restricted("wasi_snapshot_preview1.sched_yield", "_initialize")},
		{"init: get_property", pre, []wasmFunc{initCalling(call("env.proxy_get_property", 0, 0, 0, 4))},
			restricted("env.proxy_get_property", "_initialize")},
		{"init: poll_oneoff", pre, []wasmFunc{initCalling(call("wasi_snapshot_preview1.poll_oneoff", 0, 64, 1, 128))},
			restricted("wasi_snapshot_preview1.poll_oneoff", "_initialize")},
		{"init: poll_oneoff after 94091cd", post, []wasmFunc{initCalling(call("wasi_snapshot_preview1.poll_oneoff", 0, 64, 1, 128))}, ""},
		{"malloc: proxy_log", pre, []wasmFunc{mallocCalling("env.proxy_log", 2, 0, 0), configure}, ""},
		{"malloc: poll_oneoff", pre, []wasmFunc{mallocCalling("wasi_snapshot_preview1.poll_oneoff", 0, 64, 1, 128), configure},
			restricted("wasi_snapshot_preview1.poll_oneoff", "proxy_on_memory_allocate")},
		{"malloc: poll_oneoff after 94091cd", post, []wasmFunc{mallocCalling("wasi_snapshot_preview1.poll_oneoff", 0, 64, 1, 128), configure}, ""},
		{"malloc: random_get", post, []wasmFunc{mallocCalling("wasi_snapshot_preview1.random_get", 16, 8), configure},
			restricted("wasi_snapshot_preview1.random_get", "proxy_on_memory_allocate")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := startModule(t, minimalFilter("0.2.0", wasi, tc.funcs...), tc.cpp, `{"x":1}`)
			wantErr(t, err, tc.want)
			if tc.want != "" && err != nil && !strings.HasPrefix(err.Error(), "host: canary vm: ") {
				t.Errorf("error %q does not come from the canary", err)
			}
		})
	}
}

// Before 94091cd poll_oneoff answers ENOSYS, and the Go runtime throws when
// it polls: once a timer was set (a first crypto/rand read sets one), any
// garbage collection polls (golang/go#78513), and a goroutine that sleeps
// idles the scheduler into the poller. After 94091cd all work. A
// collection in a VM that never set a timer does not poll.
func TestGoRuntimeAndPollOneoff(t *testing.T) {
	pre, post := wasmhost.CppHostBefore94091cd, wasmhost.CppHost94091cd
	for _, tc := range []struct {
		mode  string
		cpp   wasmhost.CppHost
		crash bool
	}{
		{"gc", pre, false},
		{"timer-gc", pre, true},
		{"rand-gc", pre, true},
		{"sleep", pre, true},
		{"gc", post, false},
		{"timer-gc", post, false},
		{"rand-gc", post, false},
		{"sleep", post, false},
	} {
		t.Run(tc.mode+"/"+tc.cpp.String(), func(t *testing.T) {
			h := start(t, wasmhost.Config{Module: module(t, "probe"), Upstream: newUpstream(t).URL, Workers: 1, CppHost: tc.cpp})
			r := do(t, "GET", h.URL()+"/", "", map[string]string{"x-probe-mode": tc.mode})
			polls := h.WASICalls()["poll_oneoff"]
			if !tc.crash {
				if r.status != 200 || r.header.Get("x-probe-runtime") != tc.mode+" ok" || h.Traps() != 0 {
					t.Fatalf("status %d, x-probe-runtime %q, %d traps; want 200, %q, none",
						r.status, r.header.Get("x-probe-runtime"), h.Traps(), tc.mode+" ok")
				}
				if tc.cpp == pre && polls != 0 {
					t.Errorf("poll_oneoff called %d times", polls)
				}
				return
			}
			if r.status != 500 || h.Traps() != 1 || polls == 0 {
				t.Fatalf("status %d, %d traps, %d poll_oneoff calls; want 500, 1 trap, some calls", r.status, h.Traps(), polls)
			}
			if !hasLog(h, "poll_oneoff failed") {
				t.Errorf("no log of the runtime's throw: %v", h.Logs())
			}
		})
	}
}

// Before 94091cd a Go panic never prints its message: the runtime's
// freezetheworld sleeps first, poll_oneoff answers ENOSYS, and the runtime
// throws again ("panic during panic"). The VM fails all the same.
func TestGoPanicMessageLostBefore94091cd(t *testing.T) {
	h := start(t, wasmhost.Config{Module: module(t, "probe"), Upstream: newUpstream(t).URL, Workers: 1})
	if r := do(t, "GET", h.URL()+"/", "", map[string]string{"x-probe-mode": "trap"}); r.status != 500 || h.Traps() != 1 {
		t.Fatalf("status %d, %d traps; want 500 and 1", r.status, h.Traps())
	}
	if !hasLog(h, "fatal error: wasi_snapshot_preview1.poll_oneoff") || !hasLog(h, "panic during panic") {
		t.Errorf("no nested throw from usleep in the logs")
	}
	if hasLog(h, "probe trap requested") {
		t.Errorf("the panic message was printed")
	}
}
