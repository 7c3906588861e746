package wasmhost

// The response, streamed as Envoy streams it. The upstream's headers go
// through proxy_on_response_headers and, if it continues, to the client at
// once. The body then arrives chunk by chunk (upstreamData): each chunk is
// one proxy_on_response_body call, and what the guest lets through is
// written to the client and flushed before the next chunk is read. A guest
// that returns Pause from a body callback buffers: the next callback sees
// the old bytes and the new (Envoy >= 1.32, PR #36411). A guest that
// pauses the headers sees no body callback until it continues; the body
// is buffered meanwhile, up to MaxBodyBytes, as Envoy's watermarks stop
// reading there. A local reply takes the same path with its whole body
// already arrived.

// lateUpstreamReset is Envoy's response code details for an upstream that
// failed after its response headers arrived (router.cc, onUpstreamReset).
const lateUpstreamReset = "upstream_reset_after_response_started{connection_termination}"

// upstreamHeaders starts the response callbacks with the upstream's
// response headers; the body, if any, follows through upstreamData.
func (v *vm) upstreamHeaders(s *stream, seq int, res *upstreamResult) {
	if s.phase != phaseUpstream || seq != s.upstreamSeq {
		return // a local reply or a reset overtook the upstream, and cancelled it
	}
	s.respHeaders = newHeaderMap(res.headers)
	s.respBody = res.data
	s.upBody = res.body
	s.respEnded = res.body == nil
	s.upstreamAddr = res.addr
	s.codeDetails = res.details
	s.phase = phaseResponseHeaders
	s.needCall = true
	v.advance(s)
}

// upstreamData takes what one read of the upstream's body brought.
func (v *vm) upstreamData(s *stream, seq int, c upstreamChunk) {
	if s.phase >= phaseReplied || seq != s.upstreamSeq || !s.reading {
		return
	}
	s.reading = false
	if c.err != nil {
		v.upstreamReset(s, c.err)
		return
	}
	if len(s.respBody) == 0 {
		s.respBody = c.data
	} else {
		s.respBody = append(s.respBody, c.data...)
	}
	if c.end {
		s.respEnded = true
		if len(c.trailers) > 0 {
			s.upstreamTrailer = true
			s.respTrailers = newHeaderMap(c.trailers)
		}
	}
	if s.phase == phaseResponseBody {
		switch {
		case s.paused && int64(len(s.respBody)) > v.h.cfg.MaxBodyBytes:
			v.tooLarge(s)
			return
		case len(c.data) > 0 || s.lastBodyCall():
			v.unpause(s)
			s.needCall = true
		case s.respEnded: // trailers, and no more bytes
			v.unpause(s)
			s.phase = phaseResponseTrailers
			s.needCall = true
		}
	}
	// In the headers phase the guest is paused: the bytes wait for it.
	v.advance(s)
}

// upstreamReset ends a stream whose upstream failed after its headers, as
// Envoy's router does: once the headers went to the client, the stream is
// reset (the client sees a truncated response, and the guest no end of
// stream); while the guest still holds them, a 503 goes straight to the
// client.
func (v *vm) upstreamReset(s *stream, err error) {
	v.h.hostLog(v.index, LogInfo, "stream %d: upstream reset after the response started: %v", s.id, err)
	v.replyDirect(s, 503, "upstream connect error or disconnect/reset before headers. reset reason: connection termination",
		lateUpstreamReset)
}

// tooLarge resets a stream whose guest buffered more than MaxBodyBytes of
// the response. Envoy answers 500 if the headers have not gone out, and
// they always have by the body callbacks, so it resets.
func (v *vm) tooLarge(s *stream) {
	v.h.hostLog(v.index, LogWarn, "stream %d: the guest buffered over %d bytes of the response: resetting the stream", s.id, v.h.cfg.MaxBodyBytes)
	s.codeDetails = "response_payload_too_large"
	v.reset(s)
}

// pump asks for the next chunk of the upstream's body when the stream can
// take one: none asked for already, the last one written to the client,
// and, while the guest holds the headers, less than MaxBodyBytes waiting.
func (v *vm) pump(s *stream) {
	if s.upBody == nil || s.reading || s.writing || s.respEnded || s.phase >= phaseReplied ||
		(s.phase == phaseResponseHeaders && int64(len(s.respBody)) >= v.h.cfg.MaxBodyBytes) {
		return
	}
	s.reading = true
	s.upBody.want <- struct{}{} // never blocks: one token at a time
}

// written is the handler's word that a chunk was written to the client.
func (v *vm) written(s *stream) {
	s.writing = false
	if v.failed == nil && s.phase < phaseReplied {
		v.pump(s)
	}
}

// responseHead is the response's status and headers, which start it: from
// then on it can only be reset.
func (v *vm) responseHead(s *stream) *finalResponse {
	s.headersSent = true
	r := &finalResponse{status: v.responseStatus(s)}
	s.status = r.status
	r.headers = append(r.headers, s.respHeaders.pairs...)
	return r
}

// afterResponseHeaders goes on once the headers are let through: they go
// to the client, then to the body that arrived meanwhile, the trailers or
// waiting for the body. A response that ends with its headers goes out in
// one message, so that its framing does not depend on timing.
func (v *vm) afterResponseHeaders(s *stream) {
	if s.respEnded && len(s.respBody) == 0 && !s.upstreamTrailer {
		v.end(s)
		return
	}
	v.send(s, handlerMsg{headers: v.responseHead(s)})
	s.phase = phaseResponseBody
	switch {
	case len(s.respBody) > 0:
		s.needCall = true
	case s.respEnded: // trailers, and no body
		s.phase = phaseResponseTrailers
		s.needCall = true
	}
}

// afterResponseBody sends what the guest let through, then goes on to the
// trailers or the end, or waits for the next chunk.
func (v *vm) afterResponseBody(s *stream) {
	switch {
	case !s.respEnded:
		v.flush(s)
	case s.upstreamTrailer:
		v.flush(s)
		s.phase = phaseResponseTrailers
		s.needCall = true
	default:
		v.end(s)
	}
}

// flush hands the buffered body to the client.
func (v *vm) flush(s *stream) {
	if len(s.respBody) == 0 {
		return
	}
	s.writing = true
	s.respSent += int64(len(s.respBody))
	v.send(s, handlerMsg{data: s.respBody})
	s.respBody = nil
}

// end completes the response: the rest of the body and the trailers, in
// one message, so that the handler finishes the stream (proxy_on_log, ...)
// before the client can see the response complete.
func (v *vm) end(s *stream) {
	v.unpause(s)
	v.stopUpstream(s)
	s.phase = phaseReplied
	m := handlerMsg{end: true, data: s.respBody}
	if !s.headersSent {
		m.headers = v.responseHead(s)
	}
	s.respSent += int64(len(s.respBody))
	s.respBody = nil
	if s.respTrailers != nil {
		m.trailers = append(m.trailers, s.respTrailers.pairs...)
	}
	v.send(s, m)
}
