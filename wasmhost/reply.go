package wasmhost

import (
	"context"
	"strconv"
)

// The stream's I/O steps: forwarding to the upstream, replying (with the
// upstream's response, a local reply or a host error), resetting, and the
// final callbacks.

// forward hands the request, as the guest left it, to the handler.
func (v *vm) forward(s *stream) {
	s.phase = phaseUpstream
	s.upstreamSeq++
	ctx, cancel := context.WithCancel(s.reqCtx)
	s.cancelUpstream = cancel
	req := &upstreamRequest{ctx: ctx, seq: s.upstreamSeq, body: s.reqBody, upstream: v.routeUpstream(s)}
	req.headers = append(req.headers, s.reqHeaders.pairs...)
	if s.reqTrailers != nil {
		req.trailers = append(req.trailers, s.reqTrailers.pairs...)
	}
	v.send(s, handlerMsg{forward: req})
}

// startLocalReply sends the guest's local reply, as Envoy's filter manager
// does (sendLocalReply). Before the response callbacks, it goes through
// them, as through the encoder filter chain (a second local reply is
// refused meanwhile). Once they have started but before the headers went
// to the client, it replaces the response directly. After that, a new
// response is impossible: the stream is reset.
func (v *vm) startLocalReply(s *stream, lr *localReply) {
	details := lr.details
	if details == "" {
		details = "wasm_local_reply"
	}
	if s.headersSent {
		v.h.hostLog(v.index, LogWarn, "stream %d: local reply %d after the response started: resetting the stream", s.id, lr.status)
		s.codeDetails = details
		v.reset(s)
		return
	}
	v.unpause(s)
	v.stopUpstream(s)
	s.respHeaders = newHeaderMap([][2]string{{":status", strconv.Itoa(lr.status)}})
	for _, h := range lr.headers {
		s.respHeaders.add(h[0], h[1])
	}
	if len(lr.body) > 0 {
		if _, ok := s.respHeaders.get("content-type"); !ok {
			s.respHeaders.add("content-type", "text/plain")
		}
		s.respHeaders.replace("content-length", strconv.Itoa(len(lr.body)))
	}
	s.respBody = lr.body
	s.respTrailers = nil
	s.upstreamTrailer = false
	s.respEnded = true
	s.codeDetails = details
	s.continueDir = [2]bool{}
	s.resultPending = false
	if s.phase >= phaseResponseHeaders {
		v.reply(s)
		return
	}
	s.phase = phaseResponseHeaders
	s.needCall = true
}

// replyDirect answers the stream with a response the guest does not see,
// or resets it if its response has started.
func (v *vm) replyDirect(s *stream, status int, body, details string) {
	if s.phase >= phaseReplied {
		return
	}
	s.codeDetails = details
	if s.headersSent {
		v.reset(s)
		return
	}
	v.unpause(s)
	v.stopUpstream(s)
	s.respHeaders = newHeaderMap([][2]string{{":status", strconv.Itoa(status)}, {"content-type", "text/plain"}})
	s.respBody = []byte(body)
	s.respTrailers = nil
	v.reply(s)
}

// reply hands the final response to the handler.
func (v *vm) reply(s *stream) {
	v.unpause(s)
	v.stopUpstream(s)
	s.phase = phaseReplied
	r := &finalResponse{status: v.responseStatus(s), body: s.respBody}
	s.status = r.status
	s.respSent = int64(len(s.respBody))
	s.respBody = nil
	r.headers = append(r.headers, s.respHeaders.pairs...)
	if s.respTrailers != nil {
		r.trailers = append(r.trailers, s.respTrailers.pairs...)
	}
	v.send(s, handlerMsg{reply: r})
}

// reset aborts the stream (proxy_close_stream): the client's connection is
// closed without a response.
func (v *vm) reset(s *stream) {
	v.unpause(s)
	v.stopUpstream(s)
	s.resetPending = false
	s.phase = phaseReplied
	v.send(s, handlerMsg{reset: true})
}

// stopUpstream cancels the upstream request; what it still delivers is
// ignored (a new sequence number).
func (v *vm) stopUpstream(s *stream) {
	if s.cancelUpstream != nil {
		s.cancelUpstream()
		s.cancelUpstream = nil
		s.upstreamSeq++
		s.upBody = nil
		s.reading = false
	}
}

// responseStatus is the :status the guest left, or 502 if it is not one.
func (v *vm) responseStatus(s *stream) int {
	status, err := strconv.Atoi(firstValue(s.respHeaders, ":status"))
	if err != nil || status < 200 || status > 999 {
		v.h.hostLog(v.index, LogError, "stream %d: invalid :status %q, answering 502", s.id, firstValue(s.respHeaders, ":status"))
		return 502
	}
	return status
}

// finish ends the stream after the handler wrote the response (or the client
// went away): proxy_on_log, proxy_on_done, proxy_on_delete.
func (v *vm) finish(s *stream, clientGone bool) {
	defer close(s.finished)
	defer v.h.recordAccess(s)
	if clientGone && s.phase < phaseReplied {
		s.codeDetails = "downstream_remote_disconnect" // as Envoy's connection manager sets it
	}
	v.unpause(s)
	v.stopUpstream(s)
	if s.phase == phaseFinished {
		return
	}
	s.phase = phaseFinished
	if s.id == 0 || v.streams[s.id] == nil {
		return
	}
	if v.failed != nil {
		delete(v.streams, s.id)
		return
	}
	id := uint64(s.id)
	s.logPhase = true
	if !v.h.cfg.DeferredLog {
		v.call("proxy_on_log", v.fn.log, s.id, id)
	}
	v.call("proxy_on_done", v.fn.done, s.id, id)
	v.call("proxy_on_delete", v.fn.delete, s.id, id)
	delete(v.streams, s.id)
	if v.h.cfg.DeferredLog {
		// The context is gone: the SDK finds no stream to tell.
		v.call("proxy_on_log", v.fn.log, s.id, id)
	}
	if f := v.h.cfg.FilterState; f != nil {
		state := make(map[string][]byte, len(s.props))
		for path, val := range s.props {
			state["wasm."+path] = val
		}
		f(state)
	}
}
