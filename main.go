// Command ratelimit is the proxy-wasm filter, built with
// GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared.
package main

import (
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"

	"github.com/redisrate/envoy-redis-ratelimit/proxyhost"
)

func init() { proxywasm.SetVMContext(proxyhost.NewVMContext()) }

func main() {}
