// Command logic is the filter's decision logic alone, compiled to wasm:
// its export run(n) runs the fixture request n times inside the guest,
// against fixture.Native, with no proxy-wasm ABI at all. Set beside the
// native run and the filter in the host, it tells the cost of Go compiled
// to wasm from the cost of the ABI. It lives under testdata so that
// `go build ./...` skips it; e2e/bench builds it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o logic.wasm .
package main

import "github.com/redisrate/envoy-redis-ratelimit/e2e/bench/fixture"

var native *fixture.Native

// run runs n requests and returns how many failed (-1 if the plugin did
// not start).
//
//go:wasmexport run
func run(n int32) int32 {
	if native == nil {
		var err error
		if native, err = fixture.NewNative(); err != nil {
			return -1
		}
	}
	failed := int32(0)
	for range n {
		if native.Request() != nil {
			failed++
		}
	}
	return failed
}

func main() {}
