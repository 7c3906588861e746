package wasmhost_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/dist"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// The probe compiled with its calls counted, for the tests that check a
// stream's last callbacks. They do not run in parallel, so that the counts
// are theirs.
var (
	countingOnce  sync.Once
	countingMod   *wasmhost.Module
	countingCalls *wasmhost.CallCounter
	countingErr   error
)

func countingProbe(t *testing.T) *wasmhost.Module {
	t.Helper()
	countingOnce.Do(func() {
		var wasm []byte
		if wasm, countingErr = dist.Read(dist.Probe); countingErr == nil {
			countingMod, countingCalls, countingErr = wasmhost.CompileCounting(context.Background(), wasm)
		}
	})
	if countingErr != nil {
		t.Fatal(countingErr)
	}
	countingCalls.Reset()
	return countingMod
}

// checkEndedOnce checks that one stream ended with proxy_on_log,
// proxy_on_done and proxy_on_delete, once each.
func checkEndedOnce(t *testing.T) {
	t.Helper()
	counts := countingCalls.Counts()
	for _, name := range []string{"export.proxy_on_log", "export.proxy_on_done", "export.proxy_on_delete"} {
		if counts[name] != 1 {
			t.Errorf("%s called %d times, want once", name, counts[name])
		}
	}
}

// streamGoroutines returns the stacks of goroutines still serving a stream
// or reading an upstream body.
func streamGoroutines() []string {
	buf := make([]byte, 1<<20)
	var out []string
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "wasmhost.(*Host).ServeHTTP") || strings.Contains(g, "wasmhost.(*upstreamBody).run") {
			out = append(out, g)
		}
	}
	return out
}

// An upstream that drops its connection mid-body resets the client's
// stream: a truncated response, no end of stream for the guest, and the
// stream's last callbacks once.
func TestUpstreamResetMidBody(t *testing.T) {
	up := newChunkedUpstream(t, "")
	h := start(t, wasmhost.Config{Module: countingProbe(t), Upstream: up.URL})

	resp := openStream(t, guardedContext(t), h.URL()+"/reset", map[string]string{"x-probe-body": "log"})
	up.send(t, "data: 1\n\n")
	readChunk(t, resp.Body, "data: 1\n\n")
	up.send(t, resetConn)
	if rest, err := io.ReadAll(resp.Body); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("after the upstream reset the client read %q, %v; want unexpected EOF", rest, err)
	}
	checkBodyCalls(t, h, bodyCall("data: 1\n\n", false))
	checkEndedOnce(t)
	if !hasLog(h, "details=upstream_reset_after_response_started{connection_termination}") {
		t.Errorf("response.code_details not Envoy's; logs %v", h.GuestLogs(wasmhost.LogInfo))
	}
	if h.StuckStreams() != 0 {
		t.Errorf("%d stuck streams", h.StuckStreams())
	}
}

// A client that goes away mid-stream cancels the upstream and ends the
// stream, leaving no goroutine behind.
func TestClientGoneMidStream(t *testing.T) {
	up := newChunkedUpstream(t, "")
	h := start(t, wasmhost.Config{Module: countingProbe(t), Upstream: up.URL})

	ctx, cancel := context.WithCancel(guardedContext(t))
	resp := openStream(t, ctx, h.URL()+"/gone", map[string]string{"x-probe-body": "log"})
	up.send(t, "data: 1\n\n")
	readChunk(t, resp.Body, "data: 1\n\n")
	cancel()
	<-up.cancelled
	eventually(t, "the stream's end", func() bool { return countingCalls.Counts()["export.proxy_on_delete"] == 1 })
	checkEndedOnce(t)
	checkBodyCalls(t, h, bodyCall("data: 1\n\n", false))
	if !hasLog(h, "details=downstream_remote_disconnect") {
		t.Errorf("response.code_details not Envoy's; logs %v", h.GuestLogs(wasmhost.LogInfo))
	}
	eventually(t, "the stream's goroutines to end", func() bool { return len(streamGoroutines()) == 0 })
	if h.StuckStreams() != 0 {
		t.Errorf("%d stuck streams", h.StuckStreams())
	}
}

// A local reply once the response started cannot replace it: Envoy resets
// the stream.
func TestLocalReplyAfterResponseStartedResets(t *testing.T) {
	up := newChunkedUpstream(t, "")
	h := start(t, wasmhost.Config{Module: countingProbe(t), Upstream: up.URL})

	resp := openStream(t, guardedContext(t), h.URL()+"/late", map[string]string{"x-probe-body": "reply"})
	up.send(t, "data: 1\n\n")
	if b, err := io.ReadAll(resp.Body); resp.StatusCode != 200 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %d %q, %v; want the upstream's 200, truncated", resp.StatusCode, b, err)
	}
	<-up.cancelled
	checkEndedOnce(t)
	if !hasLog(h, "status=200 err=<nil> details=wasm_local_reply") {
		t.Errorf("logs %v", h.GuestLogs(wasmhost.LogInfo))
	}
}

// A client that goes away before the upstream's response headers ends the
// stream as Envoy does: the guest gets no response headers (no 503 made
// up for a client that is gone), and the stream's last callbacks once.
func TestClientGoneBeforeResponseHeaders(t *testing.T) {
	arrived, cancelled := make(chan struct{}), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
		close(cancelled)
	}))
	t.Cleanup(up.Close)
	h := start(t, wasmhost.Config{Module: countingProbe(t), Upstream: up.URL})

	ctx, cancel := context.WithCancel(guardedContext(t))
	req, _ := http.NewRequestWithContext(ctx, "GET", h.URL()+"/early", nil)
	failed := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		failed <- err
	}()
	<-arrived
	cancel()
	<-cancelled
	if err := <-failed; err == nil {
		t.Fatal("the client got a response")
	}
	eventually(t, "the stream's end", func() bool { return countingCalls.Counts()["export.proxy_on_delete"] == 1 })
	checkEndedOnce(t)
	if n := countingCalls.Counts()["export.proxy_on_response_headers"]; n != 0 {
		t.Errorf("proxy_on_response_headers called %d times for a client gone before the response", n)
	}
}
