//go:build wasip1

package proxyhost

import (
	"unsafe"

	"github.com/redisrate/envoy-redis-ratelimit/filter"
	"github.com/redisrate/envoy-redis-ratelimit/filter/headermap"
)

// Host calls made directly, not through the SDK, where the SDK's wrapper
// costs more than the call: it decodes every header into new strings, and
// time.Now reads two clocks.

//go:wasmimport env proxy_get_header_map_pairs
func proxyGetHeaderMapPairs(mapType int32, data unsafe.Pointer, size *int32) int32

//go:wasmimport env proxy_send_local_response
func proxySendLocalResponse(status uint32, details *byte, detailsLen int32, body *byte, bodyLen int32,
	headers *byte, headersLen int32, grpcStatus int32) int32

//go:wasmimport env proxy_set_property
func proxySetProperty(path *byte, pathLen int32, value *byte, valueLen int32) int32

//go:wasmimport wasi_snapshot_preview1 clock_time_get
func clockTimeGet(clockID uint32, precision uint64, time *uint64) uint32

const mapTypeRequestHeaders = 0

// onRequestHeaders hands the stream the request headers serialized, in
// memory the host allocated with proxy_on_memory_allocate (none on failure).
func onRequestHeaders(s *filter.Stream) filter.Action {
	return s.OnRequestHeaderMap(requestHeaderMap())
}

func requestHeaderMap() []byte {
	out.data, out.size = nil, 0
	if proxyGetHeaderMapPairs(mapTypeRequestHeaders, unsafe.Pointer(&out.data), &out.size) != 0 || out.data == nil || out.size <= 0 {
		return nil
	}
	return unsafe.Slice(out.data, out.size)
}

// monotonicNanos reads the monotonic clock: one host call.
func monotonicNanos() int64 {
	if clockTimeGet(1, 1, &out.nanos) != 0 {
		return 0
	}
	return int64(out.nanos)
}

// out receives host calls' out-parameters. A local whose address a host
// call takes escapes to the heap; the guest runs one callback at a time,
// so one set serves every call.
var out struct {
	data  *byte
	size  int32
	nanos uint64
	id    uint32
}

// sendLocalReply sends a local reply with no gRPC status, its headers
// encoded once per slice: the filter never changes headers it has sent,
// and the deny cache answers a flood on one key with the same slice.
func sendLocalReply(status int, headers [][2]string, body []byte) bool {
	if len(headers) == 0 || len(lastReply.headers) != len(headers) || &lastReply.headers[0] != &headers[0] {
		lastReply.headers, lastReply.wire = headers, headermap.Append(nil, headers)
	}
	return proxySendLocalResponse(uint32(status), nil, 0, unsafe.SliceData(body), int32(len(body)),
		unsafe.SliceData(lastReply.wire), int32(len(lastReply.wire)), -1) == 0
}

// lastReply is the last local reply's headers and their encoding.
var lastReply struct {
	headers [][2]string
	wire    []byte
}

// setDecision sets the ratelimit.decision property: one host call, the
// path a constant (the SDK's SetProperty serializes it on each call).
func setDecision(value []byte) bool {
	return proxySetProperty(unsafe.StringData(decisionProperty), int32(len(decisionProperty)),
		unsafe.SliceData(value), int32(len(value))) == 0
}
