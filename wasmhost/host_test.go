package wasmhost_test

import (
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

func TestNoopPassesRequestsThroughUnchanged(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	h := start(t, wasmhost.Config{Module: module(t, "noop"), Upstream: up.URL})

	r := do(t, "POST", h.URL()+"/echo/a%20b?x=1&y=two", "hello body", map[string]string{"X-Custom": "c1"})
	if r.status != 200 {
		t.Fatalf("status %d, body %q", r.status, r.body)
	}
	e := r.echo(t)
	if e.Method != "POST" || e.URI != "/echo/a%20b?x=1&y=two" || e.Body != "hello body" {
		t.Errorf("upstream saw %s %s body %q", e.Method, e.URI, e.Body)
	}
	if got := e.Headers["X-Custom"]; len(got) != 1 || got[0] != "c1" {
		t.Errorf("upstream saw X-Custom %q", got)
	}
	if !strings.HasPrefix(e.Host, "127.0.0.1:") {
		t.Errorf("upstream saw Host %q, want the host's own authority", e.Host)
	}
	if got := e.Headers["X-Request-Id"]; len(got) != 1 || len(got[0]) != 36 {
		t.Errorf("upstream saw X-Request-Id %q, want a generated UUID", got)
	}
	if r.header.Get("X-Upstream") != "yes" || r.header.Get("Content-Type") != "application/json" {
		t.Errorf("upstream response headers lost: %v", r.header)
	}
	if r.header.Get("Content-Length") != strconv.Itoa(len(r.body)) {
		t.Errorf("Content-Length %q for a %d-byte body", r.header.Get("Content-Length"), len(r.body))
	}

	r = do(t, "GET", h.URL()+"/status/418", "", nil)
	if r.status != 418 || r.echo(t).URI != "/status/418" {
		t.Errorf("upstream status not passed through: %d %q", r.status, r.body)
	}
	r = do(t, "GET", h.URL()+"/trailer", "", nil)
	if r.status != 200 || r.trailer.Get("X-Checksum") != "c0ffee" || r.echo(t).URI != "/trailer" {
		t.Errorf("response trailers not passed through: %d trailers %v", r.status, r.trailer)
	}
	if up.calls.Load() != 3 {
		t.Errorf("upstream called %d times, want 3", up.calls.Load())
	}
	if n := h.StuckStreams(); n != 0 {
		t.Errorf("%d stuck streams", n)
	}
}

func TestLocalReplySkipsUpstreamAndRunsResponseCallbacks(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	h := start(t, wasmhost.Config{Module: module(t, "probe"), Upstream: up.URL})

	r := do(t, "GET", h.URL()+"/limited", "", map[string]string{"x-probe-mode": "local"})
	if r.status != 429 || r.body != "denied by probe" {
		t.Fatalf("got %d %q, want 429 \"denied by probe\"", r.status, r.body)
	}
	if r.header.Get("X-Probe-Local") != "yes" || r.header.Get("Retry-After") != "7" {
		t.Errorf("local reply headers missing: %v", r.header)
	}
	// Envoy's local replies carry their length (e2e/bench's load
	// generator reads nothing else).
	if r.header.Get("Content-Length") != "15" {
		t.Errorf("local reply Content-Length %q, want 15", r.header.Get("Content-Length"))
	}
	// As in Envoy, a local reply passes through the filter's own response
	// callbacks.
	if r.header.Get("X-Probe-Response") != "1" {
		t.Errorf("proxy_on_response_headers did not run for the local reply: %v", r.header)
	}
	if up.calls.Load() != 0 {
		t.Errorf("upstream called %d times for a local reply", up.calls.Load())
	}
}

// As in Envoy (context.cc, sendLocalResponse), a second local reply
// returns Ok; the first one is what the client gets.
func TestSecondLocalReplyIsAcceptedAndIgnored(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	h := start(t, wasmhost.Config{Module: module(t, "probe"), Upstream: up.URL})

	r := do(t, "GET", h.URL()+"/", "", map[string]string{"x-probe-mode": "double-local"})
	if r.status != 403 || r.body != "first" {
		t.Errorf("got %d %q, want the first local reply", r.status, r.body)
	}
	if !hasLog(h, "second local reply accepted") {
		t.Errorf("the second local reply did not return Ok; logs: %v", h.Logs())
	}
}

func TestGuestChangesReachUpstreamAndClient(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	h := start(t, wasmhost.Config{Module: module(t, "probe"), Upstream: up.URL})

	r := do(t, "POST", h.URL()+"/b", "hello", map[string]string{
		"x-probe-mode": "append-body", "x-probe-remove": "gone", "x-probe-replace": "a"})
	e := r.echo(t)
	if e.Body != "hello+probe" {
		t.Errorf("upstream got body %q, want the guest's appended body", e.Body)
	}
	if got := e.Headers["X-Probe-Added"]; len(got) != 1 || got[0] != "1" {
		t.Errorf("added request header did not reach upstream: %v", e.Headers)
	}
	if _, ok := e.Headers["X-Probe-Remove"]; ok {
		t.Errorf("removed request header reached upstream")
	}
	if got := e.Headers["X-Probe-Replace"]; len(got) != 1 || got[0] != "a-replaced" {
		t.Errorf("replaced request header: upstream saw %q", got)
	}

	// The probe drops the upstream's content-length, as a filter that
	// changes the body must in Envoy: the body goes out chunked, or with
	// the length of what was written if it all fits before the first flush.
	r = do(t, "GET", h.URL()+"/r", "", map[string]string{"x-probe-mode": "rewrite-body"})
	if cl := r.header.Get("Content-Length"); r.body != "rewritten by probe" || (cl != "" && cl != "18") {
		t.Errorf("response body %q (Content-Length %s), want the guest's replacement", r.body, cl)
	}
}

func TestPluginStartFailureReportsGuestError(t *testing.T) {
	t.Parallel()
	_, err := wasmhost.Start(t.Context(), wasmhost.Config{
		Module:       module(t, "probe"),
		Upstream:     "http://127.0.0.1:1",
		PluginConfig: probeConfig(t, map[string]any{"fail": "bad config: limit must be > 0"}),
	})
	if err == nil || !strings.Contains(err.Error(), "plugin start failed: bad config: limit must be > 0") {
		t.Fatalf("Start error = %v, want the guest's message", err)
	}
}

func TestStreamLeftPausedIsReported(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	h := start(t, wasmhost.Config{Module: module(t, "probe"), Upstream: up.URL, PauseTimeout: 150 * time.Millisecond})

	r := do(t, "GET", h.URL()+"/hang", "", map[string]string{"x-probe-mode": "hang"})
	if r.status != 504 || r.body != "host: stream left paused" {
		t.Errorf("got %d %q, want 504 \"host: stream left paused\"", r.status, r.body)
	}
	if r.elapsed < 150*time.Millisecond {
		t.Errorf("answered after %v, before the pause timeout", r.elapsed)
	}
	if n := h.StuckStreams(); n != 1 {
		t.Errorf("StuckStreams() = %d, want 1", n)
	}
	if up.calls.Load() != 0 {
		t.Errorf("a paused stream reached the upstream")
	}
}

func TestGuestTrapFailsTheVM(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	// After 94091cd, where the runtime can print the panic (see
	// TestGoPanicMessageLostBefore94091cd).
	h := start(t, wasmhost.Config{Module: module(t, "probe"), Upstream: up.URL, Workers: 1, CppHost: wasmhost.CppHost94091cd})

	r := do(t, "GET", h.URL()+"/", "", map[string]string{"x-probe-mode": "trap"})
	if r.status != 500 || !strings.Contains(r.body, "host: wasm vm failed") {
		t.Errorf("got %d %q, want 500 from the failed VM", r.status, r.body)
	}
	if h.Traps() != 1 {
		t.Errorf("Traps() = %d, want 1", h.Traps())
	}
	if !hasLog(h, "panic: probe trap requested") {
		t.Errorf("the guest's panic message is not in the logs")
	}
	// The VM stays failed: later streams get 500 too, without a crash.
	if r := do(t, "GET", h.URL()+"/", "", nil); r.status != 500 {
		t.Errorf("request to the failed VM got %d", r.status)
	}
}

func TestProperties(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	h := start(t, wasmhost.Config{Module: module(t, "probe"), Upstream: up.URL, RootID: "probe-root"})

	var clientAddr string
	req, _ := http.NewRequest("GET", h.URL()+"/p/a?q=1", nil)
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) { clientAddr = info.Conn.LocalAddr().String() },
	}))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	_, clientPort, _ := net.SplitHostPort(clientAddr)
	hostAddr := strings.TrimPrefix(h.URL(), "http://")
	want := map[string]string{
		"X-Prop-Source-Address":      clientAddr,
		"X-Prop-Source-Port":         clientPort,
		"X-Prop-Destination-Address": hostAddr,
		"X-Prop-Request-Path":        "/p/a?q=1",
		"X-Prop-Request-Url_path":    "/p/a",
		"X-Prop-Request-Host":        hostAddr,
		"X-Prop-Request-Method":      "GET",
		"X-Prop-Request-Scheme":      "http",
		"X-Prop-Request-Protocol":    "HTTP/1.1",
		"X-Prop-Plugin_name":         "wasmhost-test",
		"X-Prop-Plugin_root_id":      "probe-root",
		"X-Prop-No-Such":             "error: error status returned by host: not found",
	}
	for k, v := range want {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if id := resp.Header.Get("X-Prop-Request-Id"); len(id) != 36 {
		t.Errorf("request.id = %q, want the generated x-request-id", id)
	}
}

// wazero fakes clocks and randomness unless told otherwise; the guest must
// see the real ones.
func TestGuestSeesRealClockAndRandomness(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	h := start(t, wasmhost.Config{Module: module(t, "probe"), Upstream: up.URL})
	a := do(t, "GET", h.URL()+"/", "", nil)
	b := do(t, "GET", h.URL()+"/", "", nil)
	ms, err := strconv.ParseInt(a.header.Get("X-Probe-Now"), 10, 64)
	if d := time.Since(time.UnixMilli(ms)); err != nil || d < 0 || d > 10*time.Second {
		t.Errorf("guest clock says %q, %v from now", a.header.Get("X-Probe-Now"), d)
	}
	if a.header.Get("X-Probe-Nonce") == b.header.Get("X-Probe-Nonce") {
		t.Errorf("guest randomness repeats: %q", a.header.Get("X-Probe-Nonce"))
	}
}

func TestHTTPCallout(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	callout := newUpstream(t)
	h := start(t, wasmhost.Config{
		Module:       module(t, "probe"),
		Upstream:     up.URL,
		HTTPClusters: map[string]string{"svc": strings.TrimPrefix(callout.URL, "http://")},
		PluginConfig: probeConfig(t, map[string]any{"http_cluster": "svc"}),
	})
	r := do(t, "GET", h.URL()+"/", "", map[string]string{"x-probe-mode": "http"})
	got := r.header.Get("X-Callout")
	if !strings.HasPrefix(got, "200 ") || !strings.Contains(got, `"uri":"/callout?from=probe"`) || !strings.Contains(got, `"host":"callout.local"`) {
		t.Errorf("X-Callout = %q, want the callout's 200 echo", got)
	}
	if r.status != 200 || callout.calls.Load() != 1 || up.calls.Load() != 1 {
		t.Errorf("status %d, callout calls %d, upstream calls %d", r.status, callout.calls.Load(), up.calls.Load())
	}

	h2 := start(t, wasmhost.Config{Module: module(t, "probe"), Upstream: up.URL,
		PluginConfig: probeConfig(t, map[string]any{"http_cluster": "unknown"})})
	r = do(t, "GET", h2.URL()+"/", "", map[string]string{"x-probe-mode": "http"})
	if got := r.header.Get("X-Callout"); got != "dispatch: error status returned by host: bad argument" {
		t.Errorf("unknown cluster: X-Callout = %q", got)
	}
}

func TestSharedDataCASAcrossVMs(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	h := start(t, wasmhost.Config{Module: module(t, "probe"), Upstream: up.URL, Workers: 3})

	// The first increment creates the key, and creating cannot be a CAS
	// (cas 0 means "no check", as in Envoy), so it runs alone.
	if got := do(t, "GET", h.URL()+"/", "", map[string]string{"x-probe-mode": "shared"}).header.Get("X-Shared-Counter"); got != "1" {
		t.Fatalf("first increment: %q", got)
	}
	const n = 13
	seen := make(chan string, n)
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen <- do(t, "GET", h.URL()+"/", "", map[string]string{"x-probe-mode": "shared"}).header.Get("X-Shared-Counter")
		}()
	}
	wg.Wait()
	close(seen)
	values := map[string]bool{}
	for v := range seen {
		values[v] = true
	}
	for i := 2; i <= n; i++ {
		if !values[strconv.Itoa(i)] {
			t.Errorf("no request saw counter value %d; saw %v", i, values)
		}
	}
	if val, cas, ok := h.SharedData("probe_counter"); !ok || string(val) != strconv.Itoa(n) || cas == 0 {
		t.Errorf("shared data = %q (cas %d, ok %v), want %d", val, cas, ok, n)
	}
}

func TestSharedQueueAndTick(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	h := start(t, wasmhost.Config{Module: module(t, "probe"), Upstream: up.URL,
		PluginConfig: probeConfig(t, map[string]any{"tick_ms": 10})})

	r := do(t, "GET", h.URL()+"/queued", "", map[string]string{"x-probe-mode": "queue"})
	if got := r.header.Get("X-Queue"); got != "ok" {
		t.Errorf("enqueue: %q", got)
	}
	eventually(t, "the queued item to be dequeued", func() bool { return hasLog(h, "queue item: /queued") })
	eventually(t, "ticks", func() bool { n, _ := h.Metric("probe_ticks"); return n >= 2 })
}
