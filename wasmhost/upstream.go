package wasmhost

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// upstreamRequest is the request as the guest left it, to be forwarded.
type upstreamRequest struct {
	ctx      context.Context // cancelled when the stream no longer needs it
	seq      int
	upstream *url.URL    // the route's upstream; nil for Config.Upstream
	headers  [][2]string // with pseudo-headers
	body     []byte
	trailers [][2]string
}

// upstreamResult is the start of a response: the upstream's headers with
// its body still to read (body), or a response the router makes itself
// (whole, in data).
type upstreamResult struct {
	headers [][2]string // with :status
	data    []byte      // the whole body of a router-made response
	body    *upstreamBody
	addr    string
	details string // response.code_details
}

// forward sends the request to its route's upstream (Config.Upstream by
// default), keeping the guest's
// :method, :path (with query) and :authority, and returns once the
// response headers arrive; the body is read later, chunk by chunk, as the
// stream asks for it. A failure before the headers becomes the response
// Envoy's router would make: 504 on timeout, 503 otherwise.
//
// UpstreamTimeout bounds the wait for the response headers only, so that a
// long streamed body (server-sent events) is never cut. Envoy's route
// timeout (15 s by default) runs until the end of the response instead;
// Istio disables it by default (timeout 0), which is what this models once
// the headers are in.
func (h *Host) forward(req *upstreamRequest) *upstreamResult {
	ctx, cancel := context.WithCancel(req.ctx)
	m := &headerMap{pairs: req.headers}
	method, _ := m.get(":method")
	path, _ := m.get(":path")
	authority, _ := m.get(":authority")
	if !strings.HasPrefix(path, "/") {
		cancel()
		return localResult(400, "host: invalid :path "+strconv.Quote(path), "invalid_path")
	}
	up := h.upstream
	if req.upstream != nil {
		up = req.upstream
	}
	r, err := newOutgoingRequest(ctx, method, up.Scheme+"://"+up.Host+path, authority,
		req.headers, req.body, req.trailers)
	if err != nil {
		cancel()
		return localResult(400, "host: invalid request: "+err.Error(), "invalid_request")
	}
	headersTimer := time.AfterFunc(h.cfg.UpstreamTimeout, cancel)
	resp, err := h.client.Do(r)
	if !headersTimer.Stop() {
		err = context.DeadlineExceeded // the headers came too late, if at all
	}
	if err != nil {
		if resp != nil {
			resp.Body.Close()
		}
		cancel()
		return upstreamFailure(err)
	}
	res := &upstreamResult{addr: up.Host, details: "via_upstream"}
	res.headers = append([][2]string{{":status", strconv.Itoa(resp.StatusCode)}}, sortedHeader(resp.Header)...)
	if resp.Body == http.NoBody { // Content-Length 0, HEAD, 204, 304: the headers end the stream
		resp.Body.Close()
		cancel()
		return res
	}
	res.body = &upstreamBody{resp: resp, cancel: cancel, want: make(chan struct{}, 1)}
	return res
}

// newOutgoingRequest builds an HTTP request from proxy-wasm headers.
func newOutgoingRequest(ctx context.Context, method, url, authority string, headers [][2]string, body []byte, trailers [][2]string) (*http.Request, error) {
	r, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	r.Host = authority
	for _, p := range headers {
		if strings.HasPrefix(p[0], ":") || p[0] == "host" || p[0] == "content-length" || hopByHop[p[0]] {
			continue
		}
		r.Header.Add(p[0], p[1])
	}
	r.ContentLength = int64(len(body))
	if len(body) == 0 {
		r.Body = http.NoBody
	}
	if len(trailers) > 0 {
		r.ContentLength = -1
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.Trailer = http.Header{}
		for _, t := range trailers {
			r.Trailer.Add(t[0], t[1])
		}
	}
	return r, nil
}

func upstreamFailure(err error) *upstreamResult {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return localResult(504, "upstream request timeout", "upstream_response_timeout")
	}
	return localResult(503, "upstream connect error or disconnect/reset before headers. reset reason: connection failure", "upstream_reset_before_response_started")
}

// localResult is a response the router makes, with the content-type and
// content-length Envoy's local replies carry.
func localResult(status int, body, details string) *upstreamResult {
	return &upstreamResult{
		headers: [][2]string{{":status", strconv.Itoa(status)}, {"content-type", "text/plain"},
			{"content-length", strconv.Itoa(len(body))}},
		data:    []byte(body),
		details: details,
	}
}

// httpCallRequest is a proxy_http_call request.
type httpCallRequest struct {
	addr     string
	headers  *headerMap
	body     []byte
	trailers [][2]string
	timeout  time.Duration
}

// doHTTPCall makes a proxy_http_call request. Like Envoy's async client, a
// connection failure or timeout still produces a response (503 or 504); only
// a failure after the response started is a failed call.
func (h *Host) doHTTPCall(ctx context.Context, req httpCallRequest) *calloutResponse {
	ctx, cancel := context.WithTimeout(ctx, req.timeout)
	defer cancel()
	method, _ := req.headers.get(":method")
	path, _ := req.headers.get(":path")
	authority, _ := req.headers.get(":authority")
	r, err := newOutgoingRequest(ctx, method, "http://"+req.addr+path, authority, req.headers.pairs, req.body, req.trailers)
	if err != nil {
		return &calloutResponse{failed: true}
	}
	resp, err := h.client.Do(r)
	if err != nil {
		lr := upstreamFailure(err)
		return &calloutResponse{headers: newHeaderMap(lr.headers), body: lr.data, trailers: newHeaderMap(nil)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, h.cfg.MaxBodyBytes+1))
	if err != nil || int64(len(body)) > h.cfg.MaxBodyBytes {
		return &calloutResponse{failed: true}
	}
	hm := newHeaderMap(append([][2]string{{":status", strconv.Itoa(resp.StatusCode)}}, sortedHeader(resp.Header)...))
	return &calloutResponse{headers: hm, body: body, trailers: newHeaderMap(sortedHeader(resp.Trailer))}
}
