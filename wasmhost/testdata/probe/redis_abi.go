package main

import "unsafe"

// Higress's Redis callout ABI, declared by the fixture itself.

//go:wasmimport env proxy_redis_init
func proxyRedisInit(clusterPtr *byte, clusterLen int32, userPtr *byte, userLen int32,
	passPtr *byte, passLen int32, timeoutMs uint32) uint32

//go:wasmimport env proxy_redis_call
func proxyRedisCall(clusterPtr *byte, clusterLen int32, queryPtr *byte, queryLen int32, calloutID *uint32) uint32

//go:wasmimport env proxy_get_buffer_bytes
func proxyGetBufferBytes(bufferType uint32, start uint32, maxSize uint32, returnData unsafe.Pointer, returnSize *int32) uint32

//go:wasmexport proxy_on_redis_call_response
func proxyOnRedisCallResponse(_ uint32, calloutID uint32, status int32, size int32) {
	onRedisReply(calloutID, status, size)
}

const bufferRedisCallResponse = 9

func redisInit(cluster, user, pass string, timeoutMs uint32) uint32 {
	return proxyRedisInit(unsafe.StringData(cluster), int32(len(cluster)), unsafe.StringData(user), int32(len(user)),
		unsafe.StringData(pass), int32(len(pass)), timeoutMs)
}

func redisCall(cluster string, query []byte) (uint32, uint32) {
	var id uint32
	st := proxyRedisCall(unsafe.StringData(cluster), int32(len(cluster)), &query[0], int32(len(query)), &id)
	return id, st
}

func redisResponse(size int32) ([]byte, uint32) {
	if size == 0 {
		return nil, 0
	}
	var data *byte
	var n int32
	st := proxyGetBufferBytes(bufferRedisCallResponse, 0, uint32(size), unsafe.Pointer(&data), &n)
	if st != 0 || data == nil {
		return nil, st
	}
	return unsafe.Slice(data, n), 0
}
