package proxyhost

import (
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"

	"github.com/redisrate/envoy-redis-ratelimit/filter"
)

// httpContext adapts one HTTP stream; it implements filter.StreamHost.
type httpContext struct {
	types.DefaultHttpContext
	id     uint32
	stream *filter.Stream
}

func (h *httpContext) OnHttpRequestHeaders(int, bool) types.Action {
	headers, err := proxywasm.GetHttpRequestHeaders()
	if err != nil {
		proxywasm.LogErrorf("ratelimit: reading request headers: %v", err)
	}
	return action(h.stream.OnRequestHeaders(headers))
}

// A body or trailers arriving while the decision is pending are held: in
// Envoy, Continue from a body callback would also release headers paused
// by OnHttpRequestHeaders, letting the request through undecided.
func (h *httpContext) OnHttpRequestBody(int, bool) types.Action {
	return action(h.stream.Hold())
}

func (h *httpContext) OnHttpRequestTrailers(int) types.Action {
	return action(h.stream.Hold())
}

func (h *httpContext) OnHttpResponseHeaders(int, bool) types.Action {
	return action(h.stream.OnResponseHeaders())
}

func (h *httpContext) OnHttpStreamDone() { h.stream.OnDone() }

func action(a filter.Action) types.Action {
	if a == filter.Pause {
		return types.ActionPause
	}
	return types.ActionContinue
}

func (h *httpContext) SourceAddress() string {
	b, err := proxywasm.GetProperty([]string{"source", "address"})
	if err != nil {
		return ""
	}
	return string(b)
}

// Resume and SendLocalReply may run in a Redis callback, where the root
// context is the effective one: make the stream's context effective first.
func (h *httpContext) Resume() {
	if err := proxywasm.SetEffectiveContext(h.id); err != nil {
		proxywasm.LogErrorf("ratelimit: set effective context %d: %v", h.id, err)
	}
	if err := proxywasm.ResumeHttpRequest(); err != nil {
		proxywasm.LogErrorf("ratelimit: resume: %v", err)
	}
}

func (h *httpContext) SendLocalReply(status int, headers [][2]string, body []byte) {
	if err := proxywasm.SetEffectiveContext(h.id); err != nil {
		proxywasm.LogErrorf("ratelimit: set effective context %d: %v", h.id, err)
	}
	if err := proxywasm.SendHttpResponse(uint32(status), headers, body, -1); err != nil {
		proxywasm.LogErrorf("ratelimit: local reply: %v", err)
	}
}

func (h *httpContext) AddResponseHeader(name, value string) {
	if err := proxywasm.AddHttpResponseHeader(name, value); err != nil {
		proxywasm.LogErrorf("ratelimit: add response header %s: %v", name, err)
	}
}
