package proxyhost

import (
	"strconv"
	"unsafe"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"

	"github.com/redisrate/envoy-redis-ratelimit/filter"
)

// httpContext adapts one HTTP stream; it implements filter.StreamHost.
type httpContext struct {
	types.DefaultHttpContext
	id     uint32
	plugin *pluginContext
	// stream is nil once released: after the response headers, when the
	// stream ends, or once the proxy has deleted the context.
	stream *filter.Stream
	gone   bool // the proxy no longer knows the context
}

func (h *httpContext) OnHttpRequestHeaders(_ int, endOfStream bool) types.Action {
	if h.stream == nil {
		return types.ActionContinue
	}
	h.stream.SetBodyFollows(!endOfStream)
	effective = h.id
	a := onRequestHeaders(h.stream)
	effective = 0
	return action(a)
}

// effective is the context the proxy holds effective while a callback
// that tracks it runs: a stream's own request callbacks (the host made it
// so), and the root callbacks that may act on streams (track), where
// enter and setEffective keep it; 0 elsewhere, where enter always asks
// the host. A stream's decision, resumption or local reply from a Redis
// reply then makes its context effective once, not once each.
var effective uint32

// setEffective makes context id the effective one, and notes it where
// tracked.
func setEffective(id uint32) error {
	err := proxywasm.SetEffectiveContext(id)
	if err == nil && effective != 0 {
		effective = id
	}
	return err
}

// A body or trailers arriving while the decision is pending are held. Envoy
// delivers none while the headers are paused (StopAllIterationAndWatermark,
// the default for ABI 0.2); with allow_on_headers_stop_iteration it would,
// and Continue from them would release the paused headers undecided.
//
// A stream that reads the body buffers it (Pause), and takes it whole at
// its end: end_of_stream, or the trailers, where Envoy (>= 1.32) serves
// the buffered body. A body over the stream's limit is not read: the
// request is decided without it.
func (h *httpContext) OnHttpRequestBody(size int, endOfStream bool) types.Action {
	if h.stream == nil {
		return types.ActionContinue
	}
	if !h.stream.WantsRequestBody() {
		return action(h.stream.HoldUntilAdmitted())
	}
	limit := h.stream.RequestBodyLimit()
	if size > limit {
		return h.decideOnBody(func(s *filter.Stream) filter.Action { return s.OnRequestBodyTooLarge(size) })
	}
	if !endOfStream {
		return types.ActionPause
	}
	var body []byte
	if size > 0 {
		body, _ = proxywasm.GetHttpRequestBody(0, size)
	}
	return h.decideOnBody(func(s *filter.Stream) filter.Action { return s.OnRequestBody(body) })
}

func (h *httpContext) OnHttpRequestTrailers(int) types.Action {
	if h.stream == nil {
		return types.ActionContinue
	}
	if !h.stream.WantsRequestBody() {
		return action(h.stream.HoldUntilAdmitted())
	}
	limit := h.stream.RequestBodyLimit()
	body, _ := proxywasm.GetHttpRequestBody(0, limit+1) // the host reads no more than it holds
	if len(body) > limit {
		return h.decideOnBody(func(s *filter.Stream) filter.Action { return s.OnRequestBodyTooLarge(len(body)) })
	}
	return h.decideOnBody(func(s *filter.Stream) filter.Action { return s.OnRequestBody(body) })
}

// decideOnBody runs a body callback's decision with the stream's context
// effective.
func (h *httpContext) decideOnBody(decide func(*filter.Stream) filter.Action) types.Action {
	effective = h.id
	a := decide(h.stream)
	effective = 0
	return action(a)
}

// The response headers are the last thing the filter acts on, so the
// stream is released here: with HTTP/3's deferred logging proxy_on_log, the
// SDK's OnHttpStreamDone, may come after the context is deleted, or never.
// A stream that settles a response cost is kept until the response ends.
func (h *httpContext) OnHttpResponseHeaders(_ int, endOfStream bool) types.Action {
	if h.stream == nil {
		return types.ActionContinue
	}
	a := h.stream.OnResponseHeaders(endOfStream)
	if !h.stream.Watching() {
		h.release()
	}
	return action(a)
}

// The body passes on at once: the filter reads each chunk, holding none.
func (h *httpContext) OnHttpResponseBody(size int, endOfStream bool) types.Action {
	if h.stream == nil {
		return types.ActionContinue
	}
	var chunk []byte
	if size > 0 && h.stream.WantsResponseBody() {
		chunk, _ = proxywasm.GetHttpResponseBody(0, size)
	}
	h.stream.OnResponseBody(chunk, endOfStream)
	if !h.stream.Watching() {
		h.release()
	}
	return types.ActionContinue
}

func (h *httpContext) OnHttpResponseTrailers(int) types.Action {
	if h.stream != nil {
		h.stream.OnResponseTrailers()
		h.release()
	}
	return types.ActionContinue
}

func (h *httpContext) OnHttpStreamDone() { h.release() }

// release hands the stream back to the plugin, once.
func (h *httpContext) release() {
	if h.stream != nil {
		h.stream.OnDone()
		h.stream = nil
		delete(h.plugin.live, h.id)
	}
}

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

// Property reads a one-segment property, such as route_name. The bytes are
// the guest's own copy, so the string shares them.
func (h *httpContext) Property(name string) string {
	b, err := proxywasm.GetProperty([]string{name})
	if err != nil || len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// PropertyPath reads a property by its path segments. The bytes are the
// guest's own copy.
func (h *httpContext) PropertyPath(path []string) ([]byte, bool) {
	b, err := proxywasm.GetProperty(path)
	return b, err == nil
}

// Resume and SendLocalReply may run in a Redis callback, where the root
// context is the effective one: make the stream's context effective first.
func (h *httpContext) Resume() {
	if !h.enter() {
		return
	}
	if err := proxywasm.ResumeHttpRequest(); err != nil {
		proxywasm.LogError("ratelimit: resume: " + err.Error())
	}
}

func (h *httpContext) SendLocalReply(status int, headers [][2]string, body []byte) {
	if !h.enter() {
		return
	}
	if !sendLocalReply(status, headers, body) {
		proxywasm.LogError("ratelimit: local reply " + strconv.Itoa(status) + " refused by the proxy")
	}
}

// enter makes the stream's context the effective one. When the proxy has
// deleted it (the client went away, and proxy_on_log never reached us),
// the stream is queued for release once the current callback is over.
func (h *httpContext) enter() bool {
	if h.gone {
		return false
	}
	if effective == h.id {
		return true
	}
	if err := setEffective(h.id); err != nil {
		h.gone = true
		h.plugin.gone = append(h.plugin.gone, h)
		return false
	}
	return true
}

// decisionProperty is the property SetDecision sets: one path segment,
// which Envoy keeps as the filter state "wasm." + the path
// (source/extensions/common/wasm/context.cc, Context::setProperty).
const decisionProperty = "ratelimit.decision"

// SetDecision sets the stream's ratelimit.decision property (filter
// state wasm.ratelimit.decision), from a Redis callback too: the stream's
// context is made effective first, as Envoy sets a property on the
// effective context's stream.
func (h *httpContext) SetDecision(value []byte) {
	if len(value) == 0 || !h.enter() {
		return
	}
	if !setDecision(value) {
		proxywasm.LogWarn("ratelimit: the proxy refused the property ratelimit.decision")
	}
}

// ResponseHeader implements filter.ResponseReader.
func (h *httpContext) ResponseHeader(name string) string {
	v, err := proxywasm.GetHttpResponseHeader(name)
	if err != nil {
		return ""
	}
	return v
}

// SetRequestHeader implements filter.RequestHeaderWriter: it replaces
// every value of the request header, which makes Envoy clear its route
// cache (see filter/degrade.go).
func (h *httpContext) SetRequestHeader(name, value string) {
	if !h.enter() {
		return
	}
	if err := proxywasm.ReplaceHttpRequestHeader(name, value); err != nil {
		proxywasm.LogError("ratelimit: set request header " + name + ": " + err.Error())
	}
}

// RemoveRequestHeader implements filter.RequestHeaderWriter.
func (h *httpContext) RemoveRequestHeader(name string) {
	if !h.enter() {
		return
	}
	if err := proxywasm.RemoveHttpRequestHeader(name); err != nil {
		proxywasm.LogError("ratelimit: remove request header " + name + ": " + err.Error())
	}
}

// ReplaceRequestBody implements filter.RequestBodyWriter: called from the
// body's last callback, it replaces the body the proxy buffered.
func (h *httpContext) ReplaceRequestBody(body []byte) {
	if !h.enter() {
		return
	}
	if err := proxywasm.ReplaceHttpRequestBody(body); err != nil {
		proxywasm.LogError("ratelimit: replace request body: " + err.Error())
	}
}

func (h *httpContext) AddResponseHeader(name, value string) {
	if err := proxywasm.AddHttpResponseHeader(name, value); err != nil {
		proxywasm.LogError("ratelimit: add response header " + name + ": " + err.Error())
	}
}
