package wasmhost_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// With allow_on_headers_stop_iteration, Pause from the request headers is
// StopIteration: the body reaches the guest while the headers wait, and
// Continue from it sends both on. Without it (Envoy's default), the body
// waits behind the paused headers: the stream stays paused until
// PauseTimeout.
func TestAllowOnHeadersStopIteration(t *testing.T) {
	up := newUpstream(t)
	for _, allow := range []bool{true, false} {
		h := start(t, wasmhost.Config{Module: module(t, "probe"), Upstream: up.URL, Workers: 1,
			AllowOnHeadersStopIteration: allow, PauseTimeout: 300 * time.Millisecond})
		r := do(t, "POST", h.URL()+"/held", "the body", map[string]string{"x-probe-mode": "hold-headers", "x-probe-replace": "a"})
		delivered := hasLog(h, "probe request body id=")
		if !allow {
			if r.status != 504 || delivered || h.StuckStreams() != 1 {
				t.Errorf("without the option: status %d, body delivered %v, stuck %d; want 504, false, 1",
					r.status, delivered, h.StuckStreams())
			}
			continue
		}
		if r.status != 200 || !hasLog(h, "size=8 eos=true") {
			t.Fatalf("with the option: status %d %q, logs %q; want 200 after one body callback", r.status, r.body, h.GuestLogs(wasmhost.LogInfo))
		}
		e := r.echo(t)
		if e.Body != "the body" || strings.Join(e.Headers["X-Probe-Replace"], ",") != "a-replaced" {
			t.Errorf("upstream got body %q, x-probe-replace %q", e.Body, e.Headers["X-Probe-Replace"])
		}
	}
}

// A request without a body stays paused whatever the option: nothing
// follows its headers.
func TestStopIterationWithoutBodyStaysPaused(t *testing.T) {
	up := newUpstream(t)
	h := start(t, wasmhost.Config{Module: module(t, "probe"), Upstream: up.URL, Workers: 1,
		AllowOnHeadersStopIteration: true, PauseTimeout: 300 * time.Millisecond})
	if r := do(t, "GET", h.URL()+"/held", "", map[string]string{"x-probe-mode": "hold-headers"}); r.status != 504 {
		t.Errorf("status %d, want 504 (left paused)", r.status)
	}
}

// RedisFallback serves a cluster name nobody configured, and says so once.
func TestRedisFallbackServesUnknownCluster(t *testing.T) {
	srv := redistest.Start(t)
	up := newUpstream(t)
	h := start(t, wasmhost.Config{
		Module:        module(t, "probe"),
		Upstream:      up.URL,
		RedisFallback: srv.Addr,
		PluginConfig:  probeConfig(t, map[string]any{"redis_cluster": "outbound|6379||redis.static", "redis_timeout_ms": 1000}),
	})
	for range 2 {
		r := do(t, "GET", h.URL()+"/", "", map[string]string{"x-redis": "PING"})
		if got := r.header.Get("X-Redis-Reply"); got != `"+PONG\r\n"` {
			t.Fatalf("reply %q, want PONG from the fallback Redis", got)
		}
	}
	n := 0
	for _, e := range h.Logs() {
		if strings.Contains(e.Message, `"outbound|6379||redis.static" is not configured`) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("logged the fallback %d times, want once", n)
	}
}
