package e2e

import (
	"context"
	"sort"
	"testing"

	"github.com/tetratelabs/wazero"
)

// envoyImports are the host functions upstream Envoy 1.33 to 1.38
// (proxy-wasm-cpp-host before 94091cd, include/proxy-wasm/exports.h) links
// in module "env" and WASI for a module exporting ABI 0.2.0, as the Go SDK
// does. A module importing anything else fails to load: "Failed to load
// Wasm module due to a missing import".
var envoyImports = map[string]bool{}

func init() {
	for _, f := range []string{
		"proxy_log", "proxy_get_status", "proxy_set_tick_period_milliseconds",
		"proxy_get_current_time_nanoseconds", "proxy_get_property", "proxy_set_property",
		"proxy_get_buffer_bytes", "proxy_get_buffer_status", "proxy_set_buffer_bytes",
		"proxy_get_header_map_pairs", "proxy_set_header_map_pairs", "proxy_get_header_map_value",
		"proxy_replace_header_map_value", "proxy_add_header_map_value", "proxy_remove_header_map_value",
		"proxy_get_header_map_size", "proxy_continue_stream", "proxy_close_stream",
		"proxy_send_local_response", "proxy_http_call", "proxy_grpc_call",
		"proxy_grpc_stream", "proxy_grpc_send", "proxy_grpc_cancel", "proxy_grpc_close",
		"proxy_get_shared_data", "proxy_set_shared_data", "proxy_register_shared_queue",
		"proxy_resolve_shared_queue", "proxy_enqueue_shared_queue", "proxy_dequeue_shared_queue",
		"proxy_define_metric", "proxy_increment_metric", "proxy_record_metric", "proxy_get_metric",
		"proxy_set_effective_context", "proxy_done", "proxy_call_foreign_function",
		"pthread_equal", "emscripten_notify_memory_growth",
	} {
		envoyImports["env."+f] = true
	}
	for _, f := range []string{
		"args_get", "args_sizes_get", "environ_get", "environ_sizes_get", "clock_time_get", "path_open",
		"fd_close", "fd_fdstat_get", "fd_fdstat_set_flags", "fd_prestat_get", "fd_prestat_dir_name",
		"fd_read", "fd_seek", "fd_write", "poll_oneoff", "proc_exit", "random_get", "sched_yield",
	} {
		envoyImports["wasi_snapshot_preview1."+f] = true
	}
}

func imports(t *testing.T, wasm []byte) []string {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	m, err := r.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range m.ImportedFunctions() {
		mod, name, _ := f.Import()
		out = append(out, mod+"."+name)
	}
	sort.Strings(out)
	return out
}

// The stock build imports only what upstream Envoy provides; the Higress
// build adds the Redis callout ABI.
func TestModuleImports(t *testing.T) {
	stock := imports(t, stockWasm)
	for _, imp := range stock {
		if !envoyImports[imp] {
			t.Errorf("the stock module imports %s, which upstream Envoy lacks", imp)
		}
	}
	t.Logf("stock module imports: %v", stock)

	hig := imports(t, higressWasm)
	has := map[string]bool{}
	for _, imp := range hig {
		has[imp] = true
	}
	if !has["env.proxy_redis_init"] || !has["env.proxy_redis_call"] {
		t.Fatalf("the Higress module lacks the Redis callout ABI: %v", hig)
	}
}
