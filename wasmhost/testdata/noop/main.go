// Command noop is a proxy-wasm filter that does nothing: every callback
// continues. The e2e host tests use it to check that a request passes
// through the host unchanged. It lives under testdata so that `go build ./...`
// skips it; the tests build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o noop.wasm .
package main

import (
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"
)

func init() {
	proxywasm.SetVMContext(&vmContext{})
}

func main() {}

type vmContext struct{ types.DefaultVMContext }

func (*vmContext) NewPluginContext(uint32) types.PluginContext { return &pluginContext{} }

type pluginContext struct{ types.DefaultPluginContext }

func (*pluginContext) NewHttpContext(uint32) types.HttpContext { return &types.DefaultHttpContext{} }
