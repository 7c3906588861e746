package wasmhost

// Host functions for HTTP streams: header maps, buffers and stream control.

// headerMapFor returns the map of type t as the active context sees it now,
// and whether the guest may change it. A nil map is "not available", which
// Envoy reports as BadArgument. Availability follows Envoy: request headers
// only until the request headers phase ends, a body phase's trailers only
// in its last body callback (where they may be added) and the trailers
// callback, response headers only in the response headers phase; in
// proxy_on_log both header maps are readable.
func (v *vm) headerMapFor(t uint32) (m *headerMap, mutable bool) {
	if t == mapHTTPCallResponseHeaders || t == mapHTTPCallResponseTrailer {
		if v.httpResp == nil {
			return nil, false
		}
		if t == mapHTTPCallResponseHeaders {
			return v.httpResp.headers, false
		}
		return v.httpResp.trailers, false
	}
	s := v.activeStream()
	if s == nil {
		return nil, false
	}
	if s.logPhase {
		switch t {
		case mapRequestHeaders:
			return s.reqHeaders, false
		case mapResponseHeaders:
			return s.respHeaders, false
		case mapResponseTrailers:
			return s.respTrailers, false
		}
		return nil, false
	}
	switch t {
	case mapRequestHeaders:
		if s.reqHeadersLive {
			return s.reqHeaders, true
		}
	case mapRequestTrailers:
		if s.phase == phaseRequestTrailers || (s.phase == phaseRequestBody && !s.clientTrailers) {
			if s.reqTrailers == nil {
				s.reqTrailers = newHeaderMap(nil)
			}
			return s.reqTrailers, true
		}
	case mapResponseHeaders:
		if s.phase == phaseResponseHeaders {
			return s.respHeaders, true
		}
	case mapResponseTrailers:
		if s.phase == phaseResponseTrailers || (s.phase == phaseResponseBody && s.lastBodyCall()) {
			if s.respTrailers == nil {
				s.respTrailers = newHeaderMap(nil)
			}
			return s.respTrailers, true
		}
	}
	return nil, false
}

func hGetHeaderMapValue(v *vm, a args) uint32 {
	key, ok := v.readString(a.u32(1), a.u32(2))
	if !ok {
		return statusInvalidMemoryAccess
	}
	m, _ := v.headerMapFor(a.u32(0))
	if m == nil {
		return statusBadArgument
	}
	val, found := m.get(key)
	if !found {
		return statusNotFound
	}
	return v.copyOut([]byte(val), a.u32(3), a.u32(4))
}

func hGetHeaderMapPairs(v *vm, a args) uint32 {
	if a.u32(0) > mapHTTPCallResponseTrailer {
		return statusBadArgument
	}
	m, _ := v.headerMapFor(a.u32(0))
	if m == nil || m.len() == 0 {
		// Envoy returns an empty result, not an error, for a missing map.
		return v.copyOut(nil, a.u32(1), a.u32(2))
	}
	return v.copyOut(encodePairs(m.pairs), a.u32(1), a.u32(2))
}

func hGetHeaderMapSize(v *vm, a args) uint32 {
	m, _ := v.headerMapFor(a.u32(0))
	if m == nil {
		return statusBadArgument
	}
	if !v.writeU32(a.u32(1), uint32(m.byteSize())) {
		return statusInvalidMemoryAccess
	}
	return statusOK
}

// mutableMap reads nothing and returns the map of type t if the guest may
// change it now.
func (v *vm) mutableMap(t uint32) *headerMap {
	m, mutable := v.headerMapFor(t)
	if !mutable {
		return nil
	}
	return m
}

func hAddHeaderMapValue(v *vm, a args) uint32 {
	return setHeaderMapValue(v, a, (*headerMap).add)
}

func hReplaceHeaderMapValue(v *vm, a args) uint32 {
	return setHeaderMapValue(v, a, (*headerMap).replace)
}

// setHeaderMapValue reads (map type, key, value) and applies set to the map.
func setHeaderMapValue(v *vm, a args, set func(m *headerMap, key, val string)) uint32 {
	key, ok1 := v.readString(a.u32(1), a.u32(2))
	val, ok2 := v.readString(a.u32(3), a.u32(4))
	if !ok1 || !ok2 {
		return statusInvalidMemoryAccess
	}
	m := v.mutableMap(a.u32(0))
	if m == nil {
		return statusBadArgument
	}
	set(m, key, val)
	return statusOK
}

func hRemoveHeaderMapValue(v *vm, a args) uint32 {
	key, ok := v.readString(a.u32(1), a.u32(2))
	if !ok {
		return statusInvalidMemoryAccess
	}
	m := v.mutableMap(a.u32(0))
	if m == nil {
		return statusBadArgument
	}
	m.remove(key)
	return statusOK
}

func hSetHeaderMapPairs(v *vm, a args) uint32 {
	data, ok := v.read(a.u32(1), a.u32(2))
	if !ok {
		return statusInvalidMemoryAccess
	}
	pairs, err := decodePairs(data)
	if err != nil {
		v.h.hostLog(v.index, LogWarn, "proxy_set_header_map_pairs: %v", err)
		return statusBadArgument
	}
	m := v.mutableMap(a.u32(0))
	if m == nil {
		return statusBadArgument
	}
	m.set(pairs)
	return statusOK
}

// bufferFor returns the buffer of type t as the active context sees it: its
// bytes (which the caller must not keep), a pointer to modify it through
// (nil if read-only) and a status (NotFound when the buffer does not exist
// now, BadArgument for an unknown type).
func (v *vm) bufferFor(t uint32) (data []byte, target *[]byte, status uint32) {
	s := v.activeStream()
	switch t {
	case bufferHTTPRequestBody:
		if s != nil && (s.phase == phaseRequestBody || s.phase == phaseRequestTrailers && s.reqBodyHeld) {
			return s.reqBody, &s.reqBody, statusOK
		}
		return nil, nil, statusOK
	case bufferHTTPResponseBody:
		if s != nil && s.phase == phaseResponseBody {
			return s.respBody, &s.respBody, statusOK
		}
		return nil, nil, statusOK
	case bufferDownstreamData, bufferUpstreamData, bufferGrpcReceiveBuffer, bufferCallData:
		return nil, nil, statusOK
	case bufferHTTPCallResponseBody:
		if v.httpResp == nil {
			return nil, nil, statusNotFound
		}
		return v.httpResp.body, nil, statusOK
	case bufferVMConfiguration:
		return v.h.cfg.VMConfig, nil, statusOK
	case bufferPluginConfiguration:
		if !v.pluginConfigVisible {
			return nil, nil, statusNotFound
		}
		return v.h.cfg.PluginConfig, nil, statusOK
	case bufferRedisCallResponse:
		return v.redisResp, nil, statusOK
	}
	return nil, nil, statusBadArgument
}

// hGetBufferBytes copies up to max bytes from start; reading past the end
// yields fewer (or no) bytes, as in proxy-wasm-cpp-host.
func hGetBufferBytes(v *vm, a args) uint32 {
	data, _, st := v.bufferFor(a.u32(0))
	if st != statusOK {
		return st
	}
	start, max := uint64(a.u32(1)), uint64(a.u32(2))
	size := uint64(len(data))
	if start > size {
		start = size
	}
	end := start + max
	if end > size {
		end = size
	}
	return v.copyOut(data[start:end], a.u32(3), a.u32(4))
}

func hGetBufferStatus(v *vm, a args) uint32 {
	data, _, st := v.bufferFor(a.u32(0))
	if st != statusOK {
		return st
	}
	if !v.writeU32(a.u32(1), uint32(len(data))) || !v.writeU32(a.u32(2), 0) {
		return statusInvalidMemoryAccess
	}
	return statusOK
}

// hSetBufferBytes follows Envoy's Buffer::copyFrom: start 0 drops the first
// length bytes and prepends the data (so start 0 with a large length
// replaces the buffer), a start at or past the end appends, anything else is
// BadArgument.
func hSetBufferBytes(v *vm, a args) uint32 {
	data, ok := v.read(a.u32(3), a.u32(4))
	if !ok {
		return statusInvalidMemoryAccess
	}
	cur, target, st := v.bufferFor(a.u32(0))
	if st != statusOK {
		return st
	}
	if target == nil {
		if a.u32(0) <= bufferHTTPResponseBody || a.u32(0) == bufferDownstreamData || a.u32(0) == bufferUpstreamData {
			return statusNotFound
		}
		return statusBadArgument
	}
	start, length := uint64(a.u32(1)), uint64(a.u32(2))
	switch {
	case start == 0:
		if length > uint64(len(cur)) {
			length = uint64(len(cur))
		}
		*target = append(data, cur[length:]...)
	case start >= uint64(len(cur)):
		*target = append(append([]byte(nil), cur...), data...)
	default:
		return statusBadArgument
	}
	return statusOK
}

// hContinueStream records continue_stream; it takes effect when the guest
// call returns. Continuing a direction the stream is not paused in, or from
// the root context, does nothing, as in Envoy.
func hContinueStream(v *vm, a args) uint32 {
	switch t := a.u32(0); t {
	case streamRequest, streamResponse:
		if s := v.activeStream(); s != nil {
			if dir, ok := s.phase.direction(); ok && dir == t {
				s.continueDir[t] = true
				v.touch(s)
			}
		}
		return statusOK
	case streamDownstream:
		return statusOK
	case streamUpstream:
		return statusUnimplemented
	}
	return statusBadArgument
}

// hCloseStream resets the stream: the client sees its connection closed.
func hCloseStream(v *vm, a args) uint32 {
	switch t := a.u32(0); t {
	case streamRequest, streamResponse:
		if s := v.activeStream(); s != nil && s.phase < phaseReplied {
			s.resetPending = true
			v.touch(s)
		}
		return statusOK
	case streamDownstream, streamUpstream:
		return statusOK
	}
	return statusBadArgument
}

// hSendLocalResponse records a local reply; it is sent when the guest call
// returns, and stops the stream whatever the callback returns.
func hSendLocalResponse(v *vm, a args) uint32 {
	details, ok1 := v.readString(a.u32(1), a.u32(2))
	body, ok2 := v.read(a.u32(3), a.u32(4))
	hdrs, ok3 := v.read(a.u32(5), a.u32(6))
	if !ok1 || !ok2 || !ok3 {
		return statusInvalidMemoryAccess
	}
	pairs, err := decodePairs(hdrs)
	if err != nil {
		v.h.hostLog(v.index, LogWarn, "proxy_send_local_response: %v", err)
		return statusBadArgument
	}
	s := v.activeStream()
	if s == nil {
		return statusOK // the root context has no stream to answer, as in Envoy
	}
	if s.localReplyHold {
		// Envoy queues it too, but the first reply has ended the stream
		// by the time it runs: Ok, and nothing happens.
		return statusOK
	}
	s.localReplyHold = true
	if s.phase >= phaseReplied {
		return statusOK
	}
	s.localReply = &localReply{status: int(a.u32(0)), body: body, headers: pairs, details: details}
	v.touch(s)
	return statusOK
}
