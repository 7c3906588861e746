//go:build wasip1 && higress

package proxyhost

import (
	"time"
	"unsafe"

	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
)

// The Redis callout ABI of Higress's Envoy build (module env). Only the
// Higress build (-tags higress) imports it: stock Envoy refuses to load a
// module that does.

const hasRedisABI = true

//go:wasmimport env proxy_redis_init
func proxyRedisInit(cluster *byte, clusterLen int32, user *byte, userLen int32, pass *byte, passLen int32, timeoutMs int32) int32

//go:wasmimport env proxy_redis_call
func proxyRedisCall(cluster *byte, clusterLen int32, query *byte, queryLen int32, calloutID *uint32) int32

//go:wasmimport env proxy_get_buffer_bytes
func proxyGetBufferBytes(bufferType int32, start int32, maxSize int32, data unsafe.Pointer, size *int32) int32

const bufferRedisCallResponse = 9

//go:wasmexport proxy_on_redis_call_response
func proxyOnRedisCallResponse(rootID, calloutID uint32, status, size int32) {
	var reply []byte
	if status == 0 && size > 0 {
		out.data, out.size = nil, 0
		if proxyGetBufferBytes(bufferRedisCallResponse, 0, size, unsafe.Pointer(&out.data), &out.size) == 0 && out.data != nil {
			reply = unsafe.Slice(out.data, out.size)
		} else {
			status = -1
		}
	}
	onRedisReply(rootID, calloutID, status == 0, reply)
}

func redisInit(cluster, user, pass string, timeout time.Duration) error {
	if s := proxyRedisInit(ptr(cluster), int32(len(cluster)), ptr(user), int32(len(user)),
		ptr(pass), int32(len(pass)), int32(timeout.Milliseconds())); s != 0 {
		return format.Errorf("status %d", s)
	}
	return nil
}

func redisCall(cluster string, cmd []byte) (uint32, error) {
	if s := proxyRedisCall(ptr(cluster), int32(len(cluster)), &cmd[0], int32(len(cmd)), &out.id); s != 0 {
		return 0, format.Errorf("proxy_redis_call: status %d", s)
	}
	return out.id, nil
}

func ptr(s string) *byte {
	if s == "" {
		return nil
	}
	return unsafe.StringData(s)
}
