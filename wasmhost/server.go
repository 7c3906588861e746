package wasmhost

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// hopByHop headers belong to one connection; Envoy's codecs do not pass them
// to filters, and this host does not either.
var hopByHop = map[string]bool{
	"connection": true, "keep-alive": true, "proxy-connection": true, "transfer-encoding": true,
	"upgrade": true, "te": true, "trailer": true, "http2-settings": true,
}

// ServeHTTP runs one request through a VM. The handler goroutine does the
// I/O (reading the request, forwarding it, writing the response); the VM's
// loop runs the guest and tells the handler what to do next.
func (h *Host) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	path, action := h.cfg.normalizePath(r.RequestURI)
	if action != pathContinue {
		h.replyPath(w, r, start, path, action)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "host: request body too large", http.StatusRequestEntityTooLarge)
			h.logDirect(r, start, path, http.StatusRequestEntityTooLarge, "request_payload_too_large")
			return
		}
		http.Error(w, "host: reading request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	s := h.newStream(r, path, body)
	s.start = start
	v := h.vms[(h.next.Add(1)-1)%uint64(len(h.vms))]
	s.vm = v
	if !v.post(func() { v.begin(s) }) {
		http.Error(w, "host: shutting down", http.StatusServiceUnavailable)
		return
	}
	out := newClientWriter(w, r, func(format string, a ...any) { h.hostLog(v.index, LogWarn, format, a...) })
	for {
		select {
		case m := <-s.toHandler:
			switch {
			case m.forward != nil:
				h.startUpstream(v, s, m.forward)
			case m.end:
				if m.headers != nil {
					out.start(m.headers)
				}
				out.end(m.data, m.trailers) // the client sees the end after finish
				h.finish(v, s, false)
				return
			case m.headers != nil:
				out.start(m.headers)
				out.flushIfIdle(s.toHandler)
			case m.data != nil:
				out.write(m.data)
				out.flushIfIdle(s.toHandler)
				v.post(func() { v.written(s) })
			case m.reply != nil:
				writeResponse(w, m.reply)
				h.finish(v, s, false)
				return
			case m.reset:
				out.flush() // what was sent before the reset reaches the client
				h.finish(v, s, false)
				panic(http.ErrAbortHandler) // closes the client's connection
			}
		case <-r.Context().Done():
			h.finish(v, s, true)
			return
		case <-v.loopDone:
			if out.started {
				panic(http.ErrAbortHandler) // a truncated response must not look whole
			}
			http.Error(w, "host: shutting down", http.StatusServiceUnavailable)
			return
		}
	}
}

// startUpstream forwards the request and hands the response headers to the
// VM; the body is read on its own goroutine, a chunk each time the VM asks.
func (h *Host) startUpstream(v *vm, s *stream, req *upstreamRequest) {
	res := h.forward(req)
	if res.body == nil && req.ctx.Err() != nil {
		// The client left (or the stream stopped its upstream) before the
		// response headers: Envoy makes no response for a stream it
		// resets, so the guest sees none; the stream's end follows.
		return
	}
	seq := req.seq
	if b := res.body; b != nil {
		go b.run(func(c upstreamChunk) { v.post(func() { v.upstreamData(s, seq, c) }) })
	}
	v.post(func() { v.upstreamHeaders(s, seq, res) })
}

// finish runs the stream's last callbacks and waits for them, so that what
// they log or count is visible once the client has the response.
func (h *Host) finish(v *vm, s *stream, clientGone bool) {
	if !v.post(func() { v.finish(s, clientGone) }) {
		return
	}
	select {
	case <-s.finished:
		h.writeAccess(s.accessLine)
	case <-v.loopDone:
	}
}

// replyPath answers a request the connection manager stops for its path,
// before any filter sees it: 400, or 307 to the normalized path.
func (h *Host) replyPath(w http.ResponseWriter, r *http.Request, start time.Time, path string, action pathAction) {
	status := http.StatusBadRequest
	if action == pathRedirect {
		status = http.StatusTemporaryRedirect
		w.Header().Set("Location", path)
	}
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(status)
	h.logDirect(r, start, path, status, "path_normalization_failed")
}

// logDirect logs a request answered without a stream.
func (h *Host) logDirect(r *http.Request, start time.Time, path string, status int, details string) {
	if h.cfg.AccessLog == nil {
		return
	}
	m := newHeaderMap(nil)
	for _, v := range r.Header.Values("X-Forwarded-For") {
		m.add("x-forwarded-for", v)
	}
	client := h.cfg.mutateRequestHeaders(r.RemoteAddr, m)
	e := accessEntry{start: start, method: r.Method, path: path, protocol: r.Proto, status: status,
		details: details, client: client}
	h.writeAccess(e.line(time.Now()))
}

// newStream builds the request as Envoy's filters see it: pseudo-headers
// first, then the client's headers (lower-cased, sorted, hop-by-hop ones
// dropped), rewritten as Envoy's connection manager does (x-forwarded-for,
// x-forwarded-proto, x-request-id; see mutateRequestHeaders), with the
// downstream address it picks.
func (h *Host) newStream(r *http.Request, path string, body []byte) *stream {
	s := &stream{
		reqCtx:         r.Context(),
		start:          time.Now(),
		protocol:       r.Proto,
		reqBody:        body,
		reqHeadersLive: true,
		toHandler:      make(chan handlerMsg, 4),
		finished:       make(chan struct{}),
	}
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		s.local = a.String()
	}
	s.connID, _ = r.Context().Value(connIDKey{}).(uint64)
	s.info = h.cfg.streamInfoFor(r)
	m := newHeaderMap([][2]string{
		{":authority", r.Host},
		{":path", path},
		{":method", r.Method},
		{":scheme", "http"},
	})
	for _, kv := range sortedHeader(r.Header) {
		m.add(kv[0], kv[1])
	}
	s.remote = h.cfg.mutateRequestHeaders(r.RemoteAddr, m)
	s.reqHeaders = m
	if t := sortedHeader(r.Trailer); len(t) > 0 {
		s.clientTrailers = true
		s.reqTrailers = newHeaderMap(t)
	}
	return s
}

// sortedHeader flattens h into lower-case pairs sorted by name, without
// hop-by-hop headers and empty trailer placeholders.
func sortedHeader(h http.Header) [][2]string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out [][2]string
	for _, k := range keys {
		lk := strings.ToLower(k)
		if hopByHop[lk] {
			continue
		}
		for _, val := range h[k] {
			out = append(out, [2]string{lk, val})
		}
	}
	return out
}

// writeResponse writes a whole response as the guest left it, when none has
// started. Content-Length is recomputed (the guest may have changed the
// body) unless there are trailers, which need chunked encoding.
func writeResponse(w http.ResponseWriter, r *finalResponse) {
	hdr := w.Header()
	copyHeaders(hdr, r.headers, true)
	if len(r.trailers) == 0 {
		hdr.Set("Content-Length", strconv.Itoa(len(r.body)))
	}
	for _, t := range r.trailers {
		hdr.Add("Trailer", t[0])
	}
	w.WriteHeader(r.status)
	w.Write(r.body)
	for _, t := range r.trailers {
		hdr.Add(t[0], t[1])
	}
}

// copyHeaders adds proxy-wasm headers to hdr, without pseudo-headers,
// hop-by-hop headers and, if dropLength, content-length.
func copyHeaders(hdr http.Header, pairs [][2]string, dropLength bool) {
	for _, p := range pairs {
		if strings.HasPrefix(p[0], ":") || hopByHop[p[0]] || (dropLength && p[0] == "content-length") {
			continue
		}
		hdr.Add(p[0], p[1])
	}
}

func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
