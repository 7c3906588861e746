package e2e

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// A request with a body is held until the decision: an admitted one reaches
// the upstream whole, a rejected one never does.
func TestRequestBodyWaitsForTheDecision(t *testing.T) {
	var calls atomic.Int64
	var lastBody atomic.Value
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		calls.Add(1)
		lastBody.Store(string(b))
	}))
	defer up.Close()
	s := scenario{rules: `[{"name":"posts","key":[{"source":"constant","value":"all"}],"limits":[{"algorithm":"sliding_log","limit":1,"window":"1m"}]}]`}
	h, err := wasmhost.Start(context.Background(), wasmhost.Config{Module: module, Upstream: up.URL, Workers: 1,
		PluginConfig:  []byte(configFor(s, redistest.Prefix(t), "1s")),
		RedisClusters: map[string]string{"redis": server.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	post := func() int {
		resp, err := http.Post(h.URL()+"/upload", "text/plain", strings.NewReader("payload"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := post(); st != 200 || calls.Load() != 1 || lastBody.Load() != "payload" {
		t.Fatalf("admitted: status %d, upstream calls %d, body %v", st, calls.Load(), lastBody.Load())
	}
	if st := post(); st != 429 || calls.Load() != 1 {
		t.Fatalf("rejected: status %d, upstream calls %d", st, calls.Load())
	}
}
