package wasmhost_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/dist"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

func newBenchVM(t *testing.T, cfg wasmhost.Config) *wasmhost.BenchVM {
	t.Helper()
	b, err := wasmhost.NewBenchVM(context.Background(), cfg)
	if err != nil {
		t.Fatalf("NewBenchVM: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

var benchHeaders = [][2]string{{":method", "GET"}, {":path", "/x"}, {":authority", "example.com"}, {":scheme", "http"}}

func TestBenchVMNoop(t *testing.T) {
	b := newBenchVM(t, wasmhost.Config{Module: module(t, "noop")})
	for range 3 {
		status, err := b.Request(benchHeaders, nil)
		if err != nil || status != 200 {
			t.Fatalf("Request = %d, %v; want 200", status, err)
		}
	}
	if n := b.RedisCalls(); n != 0 {
		t.Errorf("RedisCalls = %d, want 0", n)
	}
}

// TestBenchVMRedis checks that a Redis call is answered with the caller's
// reply through proxy_on_redis_call_response and the buffer.
func TestBenchVMRedis(t *testing.T) {
	b := newBenchVM(t, wasmhost.Config{
		Module:        module(t, "probe"),
		PluginConfig:  []byte(`{"redis_cluster": "redis"}`),
		RedisClusters: map[string]string{"redis": "127.0.0.1:1"}, // never dialled
	})
	redis := append(benchHeaders[:4:4], [2]string{"x-redis", "PING"})
	for i := 1; i <= 3; i++ {
		status, err := b.Request(redis, []byte("+PONG\r\n"))
		if err != nil || status != 200 {
			t.Fatalf("Request = %d, %v; want 200", status, err)
		}
		if n := b.RedisCalls(); n != int64(i) {
			t.Errorf("RedisCalls = %d after %d requests", n, i)
		}
	}
	if n, _ := b.Metric("probe_requests"); n != 3 {
		t.Errorf("probe_requests = %d, want 3", n)
	}
	local := append(benchHeaders[:4:4], [2]string{"x-probe-mode", "local"})
	if status, err := b.Request(local, nil); err != nil || status != http.StatusTooManyRequests {
		t.Errorf("local reply: Request = %d, %v; want 429", status, err)
	}
	hang := append(benchHeaders[:4:4], [2]string{"x-probe-mode", "hang"})
	if _, err := b.Request(hang, nil); err == nil || !strings.Contains(err.Error(), "left paused") {
		t.Errorf("hang: err = %v, want left paused", err)
	}
	trap := append(benchHeaders[:4:4], [2]string{"x-probe-mode", "trap"})
	if _, err := b.Request(trap, nil); err == nil {
		t.Error("trap: no error")
	}
}

func TestBenchVMBadConfig(t *testing.T) {
	_, err := wasmhost.NewBenchVM(context.Background(), wasmhost.Config{Module: module(t, "probe"), PluginConfig: []byte(`{"fail": "no thanks"}`)})
	if err == nil || !strings.Contains(err.Error(), "no thanks") {
		t.Fatalf("err = %v, want the guest's message", err)
	}
}

func TestCompileCounting(t *testing.T) {
	wasm, err := dist.Read(dist.Noop)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mod, counter, err := wasmhost.CompileCounting(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close(ctx)
	b := newBenchVM(t, wasmhost.Config{Module: mod})
	counter.Reset()
	for range 10 {
		if _, err := b.Request(benchHeaders, nil); err != nil {
			t.Fatal(err)
		}
	}
	got := counter.Counts()
	for _, name := range []string{"export.proxy_on_context_create", "export.proxy_on_request_headers",
		"export.proxy_on_response_headers", "export.proxy_on_done", "export.proxy_on_delete"} {
		if got[name] != 10 {
			t.Errorf("%s: %d calls for 10 requests; counts %v", name, got[name], got)
		}
	}
	if !strings.Contains(counter.Table(10), "export.proxy_on_request_headers") {
		t.Errorf("Table lacks the exports:\n%s", counter.Table(10))
	}
}

func TestStartPassThrough(t *testing.T) {
	up := newUpstream(t)
	h, err := wasmhost.StartPassThrough(wasmhost.Config{Upstream: up.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	r := do(t, "GET", h.URL()+"/a/b?c=d", "", map[string]string{"X-Test": "1"})
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	e := r.echo(t)
	if e.URI != "/a/b?c=d" || e.Headers["X-Test"][0] != "1" || len(e.Headers["X-Request-Id"]) != 1 {
		t.Errorf("upstream saw %+v", e)
	}
	if up.calls.Load() != 1 {
		t.Errorf("upstream calls = %d", up.calls.Load())
	}
}
