package wasmhost_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// chunkedUpstream answers every request with its headers at once, then
// with each string the test sends on chunks, written and flushed as it
// comes; closing chunks ends the body (with the trailer X-Usage: trailer
// if set), and resetConn closes the connection mid-body.
type chunkedUpstream struct {
	*httptest.Server
	chunks    chan string
	cancelled chan struct{} // closed when the host cancels the request
}

const resetConn = "\x00reset"

func newChunkedUpstream(t *testing.T, trailer string) *chunkedUpstream {
	t.Helper()
	u := &chunkedUpstream{chunks: make(chan string), cancelled: make(chan struct{})}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		if trailer != "" {
			w.Header().Set("Trailer", "X-Usage")
		}
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for {
			select {
			case c, ok := <-u.chunks:
				switch {
				case !ok:
					if trailer != "" {
						w.Header().Set("X-Usage", trailer)
					}
					return
				case c == resetConn:
					conn, _, _ := w.(http.Hijacker).Hijack()
					conn.Close()
					return
				}
				io.WriteString(w, c)
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				close(u.cancelled)
				return
			}
		}
	}))
	t.Cleanup(u.Close)
	return u
}

// send hands the upstream its next chunk, failing the test if it stopped.
func (u *chunkedUpstream) send(t *testing.T, chunk string) {
	t.Helper()
	select {
	case u.chunks <- chunk:
	case <-time.After(waitGuard):
		t.Fatalf("the upstream did not take chunk %q", chunk)
	}
}

// openStream sends a GET and returns once the response headers arrived.
func openStream(t *testing.T, ctx context.Context, url string, headers map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// guardedContext bounds a test's requests: a hang fails instead of blocking.
func guardedContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitGuard)
	t.Cleanup(cancel)
	return ctx
}

// readChunk reads exactly the bytes of want from the response body.
func readChunk(t *testing.T, body io.Reader, want string) {
	t.Helper()
	got := make([]byte, len(want))
	if _, err := io.ReadFull(body, got); err != nil || string(got) != want {
		t.Fatalf("client read %q, %v; want %q", got, err, want)
	}
}

// bodyCalls returns what the probe logged of its response body callbacks,
// as "size=N eos=B body=Q", in order.
func bodyCalls(h *wasmhost.Host) []string {
	var out []string
	for _, msg := range h.GuestLogs(wasmhost.LogInfo) {
		if _, call, ok := strings.Cut(msg, "probe response body "); ok {
			_, call, _ = strings.Cut(call, " ") // drop id=N
			out = append(out, call)
		}
	}
	return out
}

func bodyCall(body string, eos bool) string {
	return fmt.Sprintf("size=%d eos=%v body=%q", len(body), eos, body)
}

func checkBodyCalls(t *testing.T, h *wasmhost.Host, want ...string) {
	t.Helper()
	if got := bodyCalls(h); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("body callbacks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Server-sent events pass chunk by chunk: the client has each event
// before the upstream sends the next, and the guest sees one callback per
// event, then the end of stream.
func TestResponseBodyStreamsChunkByChunk(t *testing.T) {
	t.Parallel()
	up := newChunkedUpstream(t, "")
	h := start(t, wasmhost.Config{Module: module(t, "probe"), Upstream: up.URL})

	resp := openStream(t, guardedContext(t), h.URL()+"/v1/chat", map[string]string{"x-probe-body": "log"})
	if resp.StatusCode != 200 || resp.Header.Get("X-Probe-Response") != "1" {
		t.Fatalf("headers: %d %v", resp.StatusCode, resp.Header)
	}
	events := []string{"data: 1\n\n", "data: 2\n\n", `data: {"usage":{"total_tokens":3}}` + "\n\n"}
	for _, ev := range events {
		up.send(t, ev)
		readChunk(t, resp.Body, ev) // before the upstream sends the next
	}
	close(up.chunks)
	if rest, err := io.ReadAll(resp.Body); err != nil || len(rest) > 0 {
		t.Fatalf("after the events: %q, %v", rest, err)
	}
	checkBodyCalls(t, h, bodyCall(events[0], false), bodyCall(events[1], false), bodyCall(events[2], false), bodyCall("", true))
	if !hasLog(h, "status=200 err=<nil> details=via_upstream") || h.StuckStreams() != 0 {
		t.Errorf("stream end: stuck %d, logs %v", h.StuckStreams(), h.GuestLogs(wasmhost.LogInfo))
	}
}

// A guest that pauses its body callbacks buffers: each callback sees the
// bytes so far, nothing reaches the client, and continue_stream (here
// from a callout's answer) releases them all.
func TestResponseBodyHeldUntilContinue(t *testing.T) {
	t.Parallel()
	up := newChunkedUpstream(t, "")
	calloutCalled, letGo := make(chan struct{}), make(chan struct{})
	callout := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(calloutCalled)
		<-letGo
	}))
	t.Cleanup(callout.Close)
	h := start(t, wasmhost.Config{Module: module(t, "probe"), Upstream: up.URL,
		HTTPClusters: map[string]string{"svc": callout.Listener.Addr().String()},
		PluginConfig: probeConfig(t, map[string]any{"http_cluster": "svc"})})

	resp := openStream(t, guardedContext(t), h.URL()+"/held", map[string]string{"x-probe-body": "hold"})
	firstRead := make(chan string, 1)
	go func() {
		b := make([]byte, 64)
		n, _ := resp.Body.Read(b)
		firstRead <- string(b[:n])
	}()
	var sofar string
	for _, chunk := range []string{"alpha;", "beta;", "RELEASE;"} {
		up.send(t, chunk)
		sofar += chunk
		want := bodyCall(sofar, false)
		eventually(t, "the guest to see "+want, func() bool {
			calls := bodyCalls(h)
			return len(calls) > 0 && calls[len(calls)-1] == want
		})
	}
	<-calloutCalled
	select {
	case got := <-firstRead:
		t.Fatalf("the client got %q while the guest held the body", got)
	default:
	}
	close(letGo)
	got := <-firstRead
	readChunk(t, resp.Body, strings.TrimPrefix(sofar, got))
	close(up.chunks)
	if rest, err := io.ReadAll(resp.Body); err != nil || len(rest) > 0 {
		t.Fatalf("after the release: %q, %v", rest, err)
	}
	checkBodyCalls(t, h, bodyCall("alpha;", false), bodyCall("alpha;beta;", false),
		bodyCall("alpha;beta;RELEASE;", false), bodyCall("", true))
	if !hasLog(h, "probe release") || h.StuckStreams() != 0 {
		t.Errorf("release: stuck %d, logs %v", h.StuckStreams(), h.GuestLogs(wasmhost.LogInfo))
	}
}

// Trailers after a streamed body reach the guest's trailers callback, with
// no body callback at end of stream, and the client.
func TestResponseTrailersAfterStreamedBody(t *testing.T) {
	t.Parallel()
	up := newChunkedUpstream(t, "42")
	h := start(t, wasmhost.Config{Module: module(t, "probe"), Upstream: up.URL})

	resp := openStream(t, guardedContext(t), h.URL()+"/t", map[string]string{"x-probe-body": "log"})
	up.send(t, "part 1;")
	readChunk(t, resp.Body, "part 1;")
	up.send(t, "part 2;")
	close(up.chunks)
	if rest, err := io.ReadAll(resp.Body); err != nil || string(rest) != "part 2;" {
		t.Fatalf("rest of the body: %q, %v", rest, err)
	}
	if got := resp.Trailer.Get("X-Usage"); got != "42" {
		t.Errorf("client trailer X-Usage = %q, want 42 (trailers %v)", got, resp.Trailer)
	}
	checkBodyCalls(t, h, bodyCall("part 1;", false), bodyCall("part 2;", false))
	if !hasLog(h, "probe response trailers") {
		t.Errorf("no trailers callback; logs %v", h.GuestLogs(wasmhost.LogInfo))
	}
}

// UpstreamTimeout bounds the wait for the response headers, not a body
// that streams for longer.
func TestUpstreamTimeoutBoundsHeadersOnly(t *testing.T) {
	t.Parallel()
	const timeout = 100 * time.Millisecond
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/no-headers" {
			<-r.Context().Done()
			return
		}
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		time.Sleep(3 * timeout) // a stream longer than the timeout
		io.WriteString(w, "late but whole")
	}))
	t.Cleanup(up.Close)
	h := start(t, wasmhost.Config{Module: module(t, "probe"), Upstream: up.URL, UpstreamTimeout: timeout})

	if r := do(t, "GET", h.URL()+"/long", "", nil); r.status != 200 || r.body != "late but whole" {
		t.Errorf("long stream: %d %q, want it whole", r.status, r.body)
	}
	if r := do(t, "GET", h.URL()+"/no-headers", "", nil); r.status != 504 || r.body != "upstream request timeout" {
		t.Errorf("no headers: %d %q, want 504", r.status, r.body)
	}
}

// A guest that holds the end of a streamed body past PauseTimeout is a
// stuck stream: its response started, so it is reset.
func TestStreamLeftPausedInBodyIsReset(t *testing.T) {
	t.Parallel()
	up := newChunkedUpstream(t, "")
	h := start(t, wasmhost.Config{Module: module(t, "probe"), Upstream: up.URL, PauseTimeout: 100 * time.Millisecond})

	resp := openStream(t, guardedContext(t), h.URL()+"/held", map[string]string{"x-probe-body": "hold"})
	up.send(t, "never released")
	eventually(t, "the first body callback", func() bool { return len(bodyCalls(h)) == 1 })
	close(up.chunks)
	if b, err := io.ReadAll(resp.Body); err == nil {
		t.Fatalf("the client got a whole response %q from a stuck stream", b)
	}
	if n := h.StuckStreams(); n != 1 {
		t.Errorf("StuckStreams() = %d, want 1", n)
	}
	checkBodyCalls(t, h, bodyCall("never released", false), bodyCall("never released", true))
}
