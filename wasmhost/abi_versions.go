package wasmhost

import (
	"errors"
	"fmt"
)

// ABIVersion is the proxy-wasm ABI a module declares by exporting
// proxy_abi_version_<x>_<y>_<z>. The Go SDK exports 0.2.0.
type ABIVersion string

// The ABI versions proxy-wasm-cpp-host knows (src/bytecode_util.cc).
const (
	ABI010 ABIVersion = "0.1.0"
	ABI020 ABIVersion = "0.2.0"
	ABI021 ABIVersion = "0.2.1"
)

var abiExports = map[string]ABIVersion{
	"proxy_abi_version_0_1_0": ABI010,
	"proxy_abi_version_0_2_0": ABI020,
	"proxy_abi_version_0_2_1": ABI021,
}

// commonEnvFuncs are the "env" functions proxy-wasm-cpp-host links for every
// ABI version (include/proxy-wasm/exports.h, FOR_ALL_HOST_FUNCTIONS, plus
// pthread_equal and emscripten_notify_memory_growth), and the Redis
// callouts of Higress's build (higress-group/proxy-wasm-cpp-host).
var commonEnvFuncs = []string{
	"proxy_log", "proxy_get_status", "proxy_set_property", "proxy_get_property",
	"proxy_send_local_response", "proxy_get_shared_data", "proxy_set_shared_data",
	"proxy_register_shared_queue", "proxy_resolve_shared_queue", "proxy_dequeue_shared_queue",
	"proxy_enqueue_shared_queue", "proxy_get_header_map_value", "proxy_add_header_map_value",
	"proxy_replace_header_map_value", "proxy_remove_header_map_value", "proxy_get_header_map_pairs",
	"proxy_set_header_map_pairs", "proxy_get_header_map_size", "proxy_get_buffer_status",
	"proxy_get_buffer_bytes", "proxy_set_buffer_bytes", "proxy_http_call", "proxy_grpc_call",
	"proxy_grpc_stream", "proxy_grpc_close", "proxy_grpc_cancel", "proxy_grpc_send",
	"proxy_set_tick_period_milliseconds", "proxy_get_current_time_nanoseconds",
	"proxy_define_metric", "proxy_increment_metric", "proxy_record_metric", "proxy_get_metric",
	"proxy_set_effective_context", "proxy_done", "proxy_call_foreign_function",
	"pthread_equal", "emscripten_notify_memory_growth",
	"proxy_redis_init", "proxy_redis_call",
}

// abiEnvFuncs are the functions WasmBase::registerCallbacks (src/wasm.cc)
// adds for one ABI version only: proxy_get_log_level exists only for
// 0.2.1; proxy_continue_request/_response, proxy_get_configuration and
// proxy_clear_route_cache only for 0.1.0.
var abiEnvFuncs = map[ABIVersion][]string{
	ABI010: {"proxy_get_configuration", "proxy_continue_request", "proxy_continue_response", "proxy_clear_route_cache"},
	ABI020: {"proxy_continue_stream", "proxy_close_stream"},
	ABI021: {"proxy_continue_stream", "proxy_close_stream", "proxy_get_log_level"},
}

// envFuncsFor is the set of "env" functions linked for abi.
func envFuncsFor(abi ABIVersion) map[string]bool {
	set := map[string]bool{}
	for _, name := range commonEnvFuncs {
		set[name] = true
	}
	for _, name := range abiEnvFuncs[abi] {
		set[name] = true
	}
	return set
}

// moduleABIVersion reads the ABI version as BytecodeUtil::getAbiVersion
// does: the first proxy_abi_version_* function export, in the order of the
// export section, wins.
func moduleABIVersion(wasm []byte) (ABIVersion, error) {
	names, err := exportedFuncNames(wasm)
	if err != nil {
		return "", err
	}
	for _, name := range names {
		if v, ok := abiExports[name]; ok {
			return v, nil
		}
	}
	return "", errors.New("Missing or unknown Proxy-Wasm ABI version")
}

// exportedFuncNames lists the module's function exports in the order of
// its export section.
func exportedFuncNames(wasm []byte) ([]string, error) {
	r := &wasmReader{b: wasm}
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return nil, errors.New("not a wasm module")
	}
	r.pos = 8
	for r.pos < len(r.b) {
		id := r.byte()
		size := int(r.u32())
		end := r.pos + size
		if r.err != nil || end > len(r.b) {
			return nil, errors.New("Failed to parse corrupted Wasm module")
		}
		if id != 7 { // export section
			r.pos = end
			continue
		}
		var names []string
		for n := r.u32(); n > 0 && r.err == nil; n-- {
			nameLen := int(r.u32())
			if r.pos+nameLen > end {
				return nil, errors.New("Failed to parse corrupted Wasm module")
			}
			name := string(r.b[r.pos : r.pos+nameLen])
			r.pos += nameLen
			if kind := r.byte(); kind == 0 {
				names = append(names, name)
			}
			r.u32() // index
		}
		if r.err != nil {
			return nil, r.err
		}
		return names, nil
	}
	return nil, nil
}

type wasmReader struct {
	b   []byte
	pos int
	err error
}

func (r *wasmReader) byte() byte {
	if r.pos >= len(r.b) {
		r.err = errors.New("Failed to parse corrupted Wasm module")
		return 0
	}
	c := r.b[r.pos]
	r.pos++
	return c
}

// u32 reads an unsigned LEB128.
func (r *wasmReader) u32() uint32 {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
	r.err = errors.New("Failed to parse corrupted Wasm module")
	return 0
}

// missingImportError is V8::link's message (src/v8/v8.cc) for an import
// the host does not link.
func missingImportError(module, name string) error {
	return fmt.Errorf("Failed to load Wasm module due to a missing import: %s.%s", module, name)
}
