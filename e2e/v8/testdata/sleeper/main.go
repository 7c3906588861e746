// Command sleeper is a proxy-wasm filter that sleeps 1 ms in every
// request-headers callback. The Go runtime waits for the timer with
// poll_oneoff; where that answers ENOSYS, as in Envoy up to 1.38, the
// runtime throws. The V8 test runs it to show that its host models this
// and that the test catches the throw. It lives under testdata so that
// `go build ./...` skips it.
package main

import (
	"time"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"
)

func init() { proxywasm.SetVMContext(&vmContext{}) }

func main() {}

type vmContext struct{ types.DefaultVMContext }

func (*vmContext) NewPluginContext(uint32) types.PluginContext { return &pluginContext{} }

type pluginContext struct{ types.DefaultPluginContext }

func (*pluginContext) NewHttpContext(uint32) types.HttpContext { return &httpContext{} }

type httpContext struct{ types.DefaultHttpContext }

func (*httpContext) OnHttpRequestHeaders(int, bool) types.Action {
	time.Sleep(time.Millisecond)
	return types.ActionContinue
}
