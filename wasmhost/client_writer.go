package wasmhost

import (
	"errors"
	"net/http"
	"strconv"
)

// clientWriter writes a streamed response to the client. Like Envoy's
// codec, it passes the headers as the guest left them, content-length
// included: a guest that changes the body's length must remove it (in
// proxy_on_response_headers), or the client gets a broken response, as
// from Envoy; the host warns. Without content-length the body is chunked.
type clientWriter struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	warn     func(format string, a ...any)
	bodyless bool // a HEAD request: a content-length, no body
	started  bool
	declared int64 // the content-length sent, -1 if none
	written  int64
	warned   bool
}

func newClientWriter(w http.ResponseWriter, r *http.Request, warn func(string, ...any)) *clientWriter {
	return &clientWriter{w: w, rc: http.NewResponseController(w), warn: warn, declared: -1, bodyless: r.Method == http.MethodHead}
}

// start writes the status and headers.
func (c *clientWriter) start(r *finalResponse) {
	c.started = true
	copyHeaders(c.w.Header(), r.headers, false)
	if n, err := strconv.ParseInt(c.w.Header().Get("Content-Length"), 10, 64); err == nil && !c.bodyless &&
		r.status != http.StatusNoContent && r.status != http.StatusNotModified {
		c.declared = n
	}
	c.w.WriteHeader(r.status)
}

func (c *clientWriter) write(b []byte) {
	c.written += int64(len(b))
	if _, err := c.w.Write(b); errors.Is(err, http.ErrContentLength) && !c.warned {
		c.warned = true
		c.warn("response body longer than its content-length %d: the guest changed the body and kept content-length", c.declared)
	}
}

// end writes the last bytes and the trailers; the handler's return ends
// the response. With trailers it flushes first: Go frames a response that
// was never flushed when the handler returns, from the headers as they were
// at WriteHeader, and would give it a content-length and drop the trailers.
func (c *clientWriter) end(b []byte, trailers [][2]string) {
	c.write(b)
	if len(trailers) > 0 {
		c.flush()
	}
	for _, t := range trailers {
		c.w.Header().Add(http.TrailerPrefix+t[0], t[1])
	}
	if c.declared >= 0 && c.written < c.declared && !c.warned {
		c.warn("response body of %d bytes for content-length %d: the guest changed the body and kept content-length", c.written, c.declared)
	}
}

func (c *clientWriter) flush() { c.rc.Flush() }

// flushIfIdle flushes unless more is already queued for the client, so
// that what one event produces goes out together, as Envoy writes once per
// event loop iteration.
func (c *clientWriter) flushIfIdle(queue chan handlerMsg) {
	if len(queue) == 0 {
		c.flush()
	}
}
