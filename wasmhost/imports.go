package wasmhost

import (
	"context"
	"fmt"
	"sort"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// vmKey is the context key under which a guest call carries its *vm, so that
// host functions know which VM (and so which contexts) they act on.
type vmKey struct{}

// hostFunc is one import of module "env". It returns an i32, except those
// in voidEnvFuncs, which return nothing.
type hostFunc struct {
	params []api.ValueType // all i32 unless stated
	impl   func(v *vm, a args) uint32
}

var voidEnvFuncs = map[string]bool{"emscripten_notify_memory_growth": true}

func (f hostFunc) results(name string) []api.ValueType {
	if voidEnvFuncs[name] {
		return nil
	}
	return i32s(1)
}

func i32s(n int) []api.ValueType {
	t := make([]api.ValueType, n)
	for i := range t {
		t[i] = api.ValueTypeI32
	}
	return t
}

// unimplemented answers Unimplemented: the host provides the import so that
// modules declaring it load, but does not support it.
func unimplemented(n int) hostFunc {
	return hostFunc{i32s(n), func(*vm, args) uint32 { return statusUnimplemented }}
}

// envFuncs lists every "env" import the host provides, for any ABI version
// (link lets a module import only those of its version, abi_versions.go):
// proxy-wasm-cpp-host's, which include the Go SDK's (proxy-wasm-go-sdk
// proxywasm/internal/abi_hostcalls.go) and gRPC (unsupported here), plus
// Higress's Redis callouts.
func envFuncs() map[string]hostFunc {
	return map[string]hostFunc{
		"proxy_log":                          {i32s(3), hLog},
		"proxy_get_log_level":                {i32s(1), hGetLogLevel},
		"proxy_get_property":                 {i32s(4), hGetProperty},
		"proxy_set_property":                 {i32s(4), hSetProperty},
		"proxy_send_local_response":          {i32s(8), hSendLocalResponse},
		"proxy_continue_stream":              {i32s(1), hContinueStream},
		"proxy_close_stream":                 {i32s(1), hCloseStream},
		"proxy_continue_request":             {i32s(0), func(v *vm, _ args) uint32 { return hContinueStream(v, args{0}) }},
		"proxy_continue_response":            {i32s(0), func(v *vm, _ args) uint32 { return hContinueStream(v, args{1}) }},
		"proxy_get_configuration":            {i32s(2), hGetConfiguration},
		"proxy_clear_route_cache":            {i32s(0), func(*vm, args) uint32 { return statusOK }},
		"pthread_equal":                      {i32s(2), func(_ *vm, a args) uint32 { return uint32(b2u(a.u32(0) == a.u32(1))) }},
		"emscripten_notify_memory_growth":    {i32s(1), func(*vm, args) uint32 { return 0 }},
		"proxy_get_header_map_value":         {i32s(5), hGetHeaderMapValue},
		"proxy_add_header_map_value":         {i32s(5), hAddHeaderMapValue},
		"proxy_replace_header_map_value":     {i32s(5), hReplaceHeaderMapValue},
		"proxy_remove_header_map_value":      {i32s(3), hRemoveHeaderMapValue},
		"proxy_get_header_map_pairs":         {i32s(3), hGetHeaderMapPairs},
		"proxy_set_header_map_pairs":         {i32s(3), hSetHeaderMapPairs},
		"proxy_get_header_map_size":          {i32s(2), hGetHeaderMapSize},
		"proxy_get_buffer_bytes":             {i32s(5), hGetBufferBytes},
		"proxy_get_buffer_status":            {i32s(3), hGetBufferStatus},
		"proxy_set_buffer_bytes":             {i32s(5), hSetBufferBytes},
		"proxy_http_call":                    {i32s(10), hHTTPCall},
		"proxy_redis_init":                   {i32s(7), hRedisInit},
		"proxy_redis_call":                   {i32s(5), hRedisCall},
		"proxy_get_shared_data":              {i32s(5), hGetSharedData},
		"proxy_set_shared_data":              {i32s(5), hSetSharedData},
		"proxy_register_shared_queue":        {i32s(3), hRegisterSharedQueue},
		"proxy_resolve_shared_queue":         {i32s(5), hResolveSharedQueue},
		"proxy_enqueue_shared_queue":         {i32s(3), hEnqueueSharedQueue},
		"proxy_dequeue_shared_queue":         {i32s(3), hDequeueSharedQueue},
		"proxy_define_metric":                {i32s(4), hDefineMetric},
		"proxy_increment_metric":             {[]api.ValueType{api.ValueTypeI32, api.ValueTypeI64}, hIncrementMetric},
		"proxy_record_metric":                {[]api.ValueType{api.ValueTypeI32, api.ValueTypeI64}, hRecordMetric},
		"proxy_get_metric":                   {i32s(2), hGetMetric},
		"proxy_set_tick_period_milliseconds": {i32s(1), hSetTickPeriod},
		"proxy_set_effective_context":        {i32s(1), hSetEffectiveContext},
		"proxy_done":                         {i32s(0), hDone},
		"proxy_get_current_time_nanoseconds": {i32s(1), hGetCurrentTime},
		"proxy_call_foreign_function":        {i32s(6), hCallForeignFunction},
		"proxy_get_status":                   unimplemented(3),
		"proxy_grpc_call":                    unimplemented(12),
		"proxy_grpc_stream":                  unimplemented(9),
		"proxy_grpc_send":                    unimplemented(4),
		"proxy_grpc_cancel":                  unimplemented(1),
		"proxy_grpc_close":                   unimplemented(1),
	}
}

// instantiateEnv registers module "env" in r.
func instantiateEnv(ctx context.Context, r wazero.Runtime) error {
	funcs := envFuncs()
	names := make([]string, 0, len(funcs))
	for name := range funcs {
		names = append(names, name)
	}
	sort.Strings(names)
	b := r.NewHostModuleBuilder("env")
	for _, name := range names {
		f := funcs[name]
		b.NewFunctionBuilder().
			WithGoModuleFunction(wrapHostFunc(name, f), f.params, f.results(name)).
			Export(name)
	}
	if _, err := b.Instantiate(ctx); err != nil {
		return fmt.Errorf("host: instantiate module env: %w", err)
	}
	return nil
}

// wrapHostFunc adapts f to wazero's stack calling convention, trapping
// first if the call is restricted (restricted.go). The arguments are copied
// before the result overwrites stack[0].
func wrapHostFunc(name string, f hostFunc) api.GoModuleFunc {
	fullName, void := "env."+name, voidEnvFuncs[name]
	return func(ctx context.Context, _ api.Module, stack []uint64) {
		v, _ := ctx.Value(vmKey{}).(*vm)
		if v == nil || v.mod == nil {
			if !void {
				stack[0] = uint64(statusInternalFailure)
			}
			return
		}
		v.checkRestricted(fullName)
		a := append(args(nil), stack...)
		res := f.impl(v, a)
		if !void {
			stack[0] = api.EncodeU32(res)
		}
	}
}

// hGetConfiguration (ABI 0.1.0) hands over the plugin configuration during
// proxy_on_configure, else the VM configuration.
func hGetConfiguration(v *vm, a args) uint32 {
	data := v.h.cfg.VMConfig
	if v.pluginConfigVisible {
		data = v.h.cfg.PluginConfig
	}
	return v.copyOut(data, a.u32(0), a.u32(1))
}
