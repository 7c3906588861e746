//go:build wasip1 && higress

package proxyhost

import (
	"fmt"
	"time"
	"unsafe"
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
		var data *byte
		var n int32
		if proxyGetBufferBytes(bufferRedisCallResponse, 0, size, unsafe.Pointer(&data), &n) == 0 && data != nil {
			reply = unsafe.Slice(data, n)
		} else {
			status = -1
		}
	}
	onRedisReply(rootID, calloutID, status == 0, reply)
}

func redisInit(cluster, user, pass string, timeout time.Duration) error {
	if s := proxyRedisInit(ptr(cluster), int32(len(cluster)), ptr(user), int32(len(user)),
		ptr(pass), int32(len(pass)), int32(timeout.Milliseconds())); s != 0 {
		return fmt.Errorf("status %d", s)
	}
	return nil
}

func redisCall(cluster string, cmd []byte) (uint32, error) {
	var id uint32
	if s := proxyRedisCall(ptr(cluster), int32(len(cluster)), &cmd[0], int32(len(cmd)), &id); s != 0 {
		return 0, fmt.Errorf("proxy_redis_call: status %d", s)
	}
	return id, nil
}

func ptr(s string) *byte {
	if s == "" {
		return nil
	}
	return unsafe.StringData(s)
}
