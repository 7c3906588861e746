package wasmhost

import (
	"context"
	"time"
)

// phase is where an HTTP stream is in its life.
type phase int

const (
	phaseNew phase = iota
	phaseRequestHeaders
	phaseRequestBody
	phaseRequestTrailers
	phaseUpstream // waiting for the upstream response
	phaseResponseHeaders
	phaseResponseBody
	phaseResponseTrailers
	phaseReplied  // the final response was handed to the HTTP handler
	phaseFinished // proxy_on_log, proxy_on_done and proxy_on_delete ran
)

var phaseNames = [...]string{"new", "request headers", "request body", "request trailers",
	"upstream", "response headers", "response body", "response trailers", "replied", "finished"}

func (p phase) String() string { return phaseNames[p] }

// direction is the stream type continue_stream resumes in this phase.
func (p phase) direction() (uint32, bool) {
	switch p {
	case phaseRequestHeaders, phaseRequestBody, phaseRequestTrailers:
		return streamRequest, true
	case phaseResponseHeaders, phaseResponseBody, phaseResponseTrailers:
		return streamResponse, true
	}
	return 0, false
}

// stream is one HTTP request/response and its HTTP context in a VM. Fields
// below the request data are owned by the VM's loop.
type stream struct {
	vm       *vm
	id       uint32
	reqCtx   context.Context
	start    time.Time
	remote   string // client "ip:port"
	local    string // listener "ip:port"
	connID   uint64
	protocol string

	reqHeaders      *headerMap
	reqHeadersLive  bool // the guest may read and change them
	headersHeld     bool // paused by StopIteration while the body goes on
	routeIdx        int  // Config.Routes' index of the route, -1 for none; valid when routeFixed
	routeFixed      bool // the headers went on to the router, which picked the route (route.go)
	reqBody         []byte
	reqBodyHeld     bool       // the body callback buffered it (Pause): the trailers see it
	reqTrailers     *headerMap // nil until the client sends or the guest adds trailers
	clientTrailers  bool
	respHeaders     *headerMap
	respBody        []byte // arrived and not yet sent to the client
	respTrailers    *headerMap
	upstreamTrailer bool
	respEnded       bool          // no more response body will arrive
	upBody          *upstreamBody // the upstream's body being read, if any
	reading         bool          // a chunk of upBody was asked for
	writing         bool          // a chunk is being written to the client
	headersSent     bool          // the response started: headers went to the client
	respSent        int64         // body bytes sent to the client
	upstreamAddr    string
	codeDetails     string
	status          int               // the status sent to the client, 0 before
	accessLine      string            // the access log line, made as the stream ends
	props           map[string][]byte // set with proxy_set_property
	info            StreamInfo        // from Config.StreamInfo

	phase          phase
	needCall       bool   // the current phase's callback has not run yet
	result         uint64 // the callback's return value
	resultPending  bool
	paused         bool
	pauseSeq       int
	pauseTimer     *time.Timer
	continueDir    [2]bool // continue_stream(Request|Response) requested
	localReply     *localReply
	localReplyHold bool // a local reply was requested; a second one is ignored
	resetPending   bool
	advancing      bool
	logPhase       bool
	upstreamSeq    int
	cancelUpstream context.CancelFunc

	toHandler chan handlerMsg
	finished  chan struct{}
}

type localReply struct {
	status  int
	body    []byte
	headers [][2]string
	details string
}

// handlerMsg asks the HTTP handler goroutine to do I/O for the stream.
type handlerMsg struct {
	forward  *upstreamRequest
	headers  *finalResponse // start the response: status and headers
	data     []byte         // body bytes to write
	end      bool           // the response is complete (after headers and data, with trailers)
	trailers [][2]string
	reply    *finalResponse // a whole response, when none has started
	reset    bool
}

type finalResponse struct {
	status   int
	headers  [][2]string
	body     []byte
	trailers [][2]string
}

func (v *vm) send(s *stream, m handlerMsg) {
	select {
	case s.toHandler <- m:
	default:
		// Cannot happen: at most a forward, or headers, one data write
		// (the next waits for written) and an end or reset are ever
		// outstanding, and the channel holds more.
		v.h.hostLog(v.index, LogCritical, "stream %d: handler channel full", s.id)
	}
}

// begin creates the stream's HTTP context and starts the request callbacks.
func (v *vm) begin(s *stream) {
	v.served.Add(1)
	if v.failed != nil {
		v.replyDirect(s, 500, "host: wasm vm failed: "+v.failed.Error(), "host")
		return
	}
	v.lastID++
	s.id = v.lastID
	v.streams[s.id] = s
	if _, ok := v.call("proxy_on_context_create", v.fn.contextCreate, s.id, uint64(s.id), uint64(v.rootID)); !ok {
		return
	}
	s.phase = phaseRequestHeaders
	s.needCall = true
	v.advance(s)
}

// advance runs the stream's state machine until it waits: for the guest
// (paused), for the upstream, or for the handler.
func (v *vm) advance(s *stream) {
	if s.advancing {
		return
	}
	s.advancing = true
	defer func() { s.advancing = false }()
	for v.failed == nil && s.phase < phaseReplied {
		switch {
		case s.resetPending:
			v.reset(s)
		case s.localReply != nil:
			lr := s.localReply
			s.localReply = nil
			v.startLocalReply(s, lr)
		case s.needCall:
			s.needCall = false
			v.invoke(s)
		case s.resultPending:
			s.resultPending = false
			if s.phase == phaseRequestBody {
				s.reqBodyHeld = s.result != actionContinue && !s.continueRequested()
			}
			switch {
			case s.continues():
				v.next(s)
			case v.stopsHeadersOnly(s):
				// StopIteration: the request's body and trailers go
				// on to the guest while its headers wait.
				s.headersHeld = true
				v.next(s)
			case s.phase == phaseResponseBody && s.respEnded && s.upstreamTrailer:
				// Envoy delivers trailers to a filter that returned
				// StopIterationAndBuffer; the body waits for them.
				s.phase = phaseResponseTrailers
				s.needCall = true
			default:
				v.pause(s)
			}
		case s.paused && s.continueRequested():
			v.unpause(s)
			v.next(s)
		default:
			v.pump(s)
			return
		}
	}
}

// invoke calls the callback of the current phase.
func (v *vm) invoke(s *stream) {
	id := uint64(s.id)
	var res uint64
	var ok bool
	s.continueDir = [2]bool{} // a continue_stream before the callback is void
	switch s.phase {
	case phaseRequestHeaders:
		eos := len(s.reqBody) == 0 && !s.clientTrailers
		res, ok = v.call("proxy_on_request_headers", v.fn.requestHeaders, s.id, id, uint64(s.reqHeaders.len()), b2u(eos))
	case phaseRequestBody:
		res, ok = v.call("proxy_on_request_body", v.fn.requestBody, s.id, id, uint64(len(s.reqBody)), b2u(!s.clientTrailers))
	case phaseRequestTrailers:
		res, ok = v.call("proxy_on_request_trailers", v.fn.requestTrailers, s.id, id, uint64(s.reqTrailers.len()))
	case phaseResponseHeaders:
		eos := s.respEnded && len(s.respBody) == 0 && !s.upstreamTrailer
		res, ok = v.call("proxy_on_response_headers", v.fn.responseHeaders, s.id, id, uint64(s.respHeaders.len()), b2u(eos))
	case phaseResponseBody:
		res, ok = v.call("proxy_on_response_body", v.fn.responseBody, s.id, id, uint64(len(s.respBody)), b2u(s.lastBodyCall()))
	case phaseResponseTrailers:
		res, ok = v.call("proxy_on_response_trailers", v.fn.responseTrailers, s.id, id, uint64(s.respTrailers.len()))
	}
	if ok {
		s.result = res
		s.resultPending = true
	}
}

// continues reports whether the callback that just returned lets the stream
// go on: it returned Continue (or ContinueAndEndStream for headers, whose
// "end stream" part this host ignores), or the guest called continue_stream
// during the callback. A request body callback that stops while trailers
// are still to come also goes on to the trailers, as Envoy delivers
// trailers to a filter that returned StopIterationAndBuffer (advance does
// the same for the response, keeping the body).
func (s *stream) continues() bool {
	if s.result == actionContinue || s.continueRequested() {
		return true
	}
	switch s.phase {
	case phaseRequestHeaders, phaseResponseHeaders:
		return s.result == actionContinueAndEndStream
	case phaseRequestBody:
		return s.clientTrailers
	}
	return false
}

// lastBodyCall reports whether the response body callback about to run is
// the last, its end_of_stream: no body will follow, nor trailers.
func (s *stream) lastBodyCall() bool { return s.respEnded && !s.upstreamTrailer }

// stopsHeadersOnly reports whether the request headers' callback just
// returned Pause as StopIteration: with allow_on_headers_stop_iteration,
// when a body or trailers follow (Envoy's convertFilterHeadersStatus).
func (v *vm) stopsHeadersOnly(s *stream) bool {
	return v.h.cfg.AllowOnHeadersStopIteration && s.phase == phaseRequestHeaders &&
		s.result == actionStopIteration && (len(s.reqBody) > 0 || s.clientTrailers)
}

func (s *stream) continueRequested() bool {
	dir, ok := s.phase.direction()
	return ok && s.continueDir[dir]
}

// next moves to the next phase with a callback, or to the next I/O step.
func (v *vm) next(s *stream) {
	s.continueDir = [2]bool{}
	if s.phase == phaseRequestHeaders && !s.headersHeld {
		s.reqHeadersLive = false // Envoy drops the filter's pointer to them
		v.pickRoute(s)
	} else if s.phase != phaseRequestHeaders && s.headersHeld {
		s.headersHeld = false // the body went on, and the headers with it
		s.reqHeadersLive = false
		v.pickRoute(s)
	}
	switch s.phase {
	case phaseRequestHeaders, phaseRequestBody:
		switch {
		case s.phase == phaseRequestHeaders && len(s.reqBody) > 0:
			s.phase = phaseRequestBody
		case s.clientTrailers && s.phase != phaseRequestTrailers:
			s.phase = phaseRequestTrailers
		default:
			v.forward(s)
			return
		}
		s.needCall = true
	case phaseRequestTrailers:
		v.forward(s)
	case phaseResponseHeaders:
		v.afterResponseHeaders(s)
	case phaseResponseBody:
		v.afterResponseBody(s)
	case phaseResponseTrailers:
		v.end(s)
	}
}

// pause stops the stream until continue_stream. The timer that catches a
// stream left paused runs unless the guest buffers a body still arriving:
// each chunk calls it again.
func (v *vm) pause(s *stream) {
	s.paused = true
	if s.phase == phaseResponseBody && !s.respEnded {
		return
	}
	s.pauseSeq++
	seq := s.pauseSeq
	s.pauseTimer = time.AfterFunc(v.h.cfg.PauseTimeout, func() {
		v.post(func() { v.pauseExpired(s, seq) })
	})
}

func (v *vm) unpause(s *stream) {
	s.paused = false
	if s.pauseTimer != nil {
		s.pauseTimer.Stop()
		s.pauseTimer = nil
	}
}

// pauseExpired answers a stream the guest left paused for PauseTimeout.
func (v *vm) pauseExpired(s *stream, seq int) {
	if !s.paused || s.pauseSeq != seq || s.phase >= phaseReplied {
		return
	}
	v.h.stuck.Add(1)
	v.h.hostLog(v.index, LogError, "stream %d left paused in %s for %v", s.id, s.phase, v.h.cfg.PauseTimeout)
	v.replyDirect(s, 504, "host: stream left paused", "host")
}

func firstValue(m *headerMap, key string) string {
	if m == nil {
		return ""
	}
	val, _ := m.get(key)
	return val
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
