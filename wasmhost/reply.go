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
	req := &upstreamRequest{ctx: ctx, seq: s.upstreamSeq, body: s.reqBody}
	req.headers = append(req.headers, s.reqHeaders.pairs...)
	if s.reqTrailers != nil {
		req.trailers = append(req.trailers, s.reqTrailers.pairs...)
	}
	v.send(s, handlerMsg{forward: req})
}

// upstreamDone starts the response callbacks with the upstream's response.
func (v *vm) upstreamDone(s *stream, seq int, res *upstreamResult) {
	if s.phase != phaseUpstream || seq != s.upstreamSeq {
		return // a local reply or a reset overtook the upstream
	}
	s.cancelUpstream = nil
	s.respHeaders = newHeaderMap(res.headers)
	s.respBody = res.body
	s.upstreamTrailer = len(res.trailers) > 0
	if s.upstreamTrailer {
		s.respTrailers = newHeaderMap(res.trailers)
	}
	s.upstreamAddr = res.addr
	s.codeDetails = res.details
	s.phase = phaseResponseHeaders
	s.needCall = true
	v.advance(s)
}

// startLocalReply sends the guest's local reply. Before the response has
// started, it goes through the stream's response callbacks, as Envoy sends
// a local reply through the encoder filter chain (a second local reply is
// refused meanwhile). Once the response callbacks have started, it replaces
// the response directly.
func (v *vm) startLocalReply(s *stream, lr *localReply) {
	v.unpause(s)
	v.stopUpstream(s)
	s.respHeaders = newHeaderMap([][2]string{{":status", strconv.Itoa(lr.status)}})
	for _, h := range lr.headers {
		s.respHeaders.add(h[0], h[1])
	}
	if _, ok := s.respHeaders.get("content-type"); !ok && len(lr.body) > 0 {
		s.respHeaders.add("content-type", "text/plain")
	}
	s.respBody = lr.body
	s.respTrailers = nil
	s.upstreamTrailer = false
	s.codeDetails = lr.details
	if s.codeDetails == "" {
		s.codeDetails = "wasm_local_reply"
	}
	s.continueDir = [2]bool{}
	s.resultPending = false
	if s.phase >= phaseResponseHeaders {
		v.reply(s)
		return
	}
	s.phase = phaseResponseHeaders
	s.needCall = true
}

// replyDirect answers the stream with a host-generated response, skipping
// the guest.
func (v *vm) replyDirect(s *stream, status int, body string) {
	if s.phase >= phaseReplied {
		return
	}
	v.unpause(s)
	v.stopUpstream(s)
	s.respHeaders = newHeaderMap([][2]string{{":status", strconv.Itoa(status)}, {"content-type", "text/plain"}})
	s.respBody = []byte(body)
	s.respTrailers = nil
	s.codeDetails = "host"
	v.reply(s)
}

// reply hands the final response to the handler.
func (v *vm) reply(s *stream) {
	v.unpause(s)
	v.stopUpstream(s)
	s.phase = phaseReplied
	status, err := strconv.Atoi(firstValue(s.respHeaders, ":status"))
	if err != nil || status < 200 || status > 999 {
		v.h.hostLog(v.index, LogError, "stream %d: invalid :status %q, answering 502", s.id, firstValue(s.respHeaders, ":status"))
		status = 502
	}
	r := &finalResponse{status: status, body: s.respBody}
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

func (v *vm) stopUpstream(s *stream) {
	if s.cancelUpstream != nil {
		s.cancelUpstream()
		s.cancelUpstream = nil
	}
}

// finish ends the stream after the handler wrote the response (or the client
// went away): proxy_on_log, proxy_on_done, proxy_on_delete.
func (v *vm) finish(s *stream) {
	defer close(s.finished)
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
}
