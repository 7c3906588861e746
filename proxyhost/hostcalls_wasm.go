//go:build wasip1

package proxyhost

import (
	"unsafe"

	"github.com/redisrate/envoy-redis-ratelimit/filter"
)

// Host calls made directly, not through the SDK, where the SDK's wrapper
// costs more than the call: it decodes every header into new strings, and
// time.Now reads two clocks.

//go:wasmimport env proxy_get_header_map_pairs
func proxyGetHeaderMapPairs(mapType int32, data unsafe.Pointer, size *int32) int32

//go:wasmimport wasi_snapshot_preview1 clock_time_get
func clockTimeGet(clockID uint32, precision uint64, time *uint64) uint32

const mapTypeRequestHeaders = 0

// onRequestHeaders hands the stream the request headers serialized, in
// memory the host allocated with proxy_on_memory_allocate (none on failure).
func onRequestHeaders(s *filter.Stream) filter.Action {
	return s.OnRequestHeaderMap(requestHeaderMap())
}

func requestHeaderMap() []byte {
	var data *byte
	var size int32
	if proxyGetHeaderMapPairs(mapTypeRequestHeaders, unsafe.Pointer(&data), &size) != 0 || data == nil || size <= 0 {
		return nil
	}
	return unsafe.Slice(data, size)
}

// monotonicNanos reads the monotonic clock: one host call.
func monotonicNanos() int64 {
	var t uint64
	if clockTimeGet(1, 1, &t) != 0 {
		return 0
	}
	return int64(t)
}
