package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/proxytest"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/proxyhost"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// With HTTP/3's deferred logging, proxy_on_log may never reach a stream
// (the SDK drops it after proxy_on_delete). Streams are released all the
// same: after their response headers, allowed and denied alike.
func TestStreamsReleasedWithoutOnLog(t *testing.T) {
	prefix := redistest.Prefix(t)
	config := `{"redis":{"transport":"webdis","cluster":"webdis","username":"ratelimit","password":"s3cret","key_prefix":"` + prefix + `"},
		"rules":[{"name":"api","key":[{"source":"header","name":"x-user"}],"limits":[{"algorithm":"sliding_log","limit":3,"window":"1m"}]}]}`
	webdis := redistest.StartWebdis(t, server.Addr)
	h, reset := proxytest.NewHostEmulator(proxytest.NewEmulatorOption().WithVMContext(proxyhost.NewVMContext()).
		WithPluginConfiguration([]byte(config)))
	defer reset()
	if h.StartPlugin() != types.OnPluginStartStatusOK {
		t.Fatalf("plugin start failed: %q", h.GetCriticalLogs())
	}
	before := proxyhost.LiveStreams() // what earlier emulator tests left
	for i := range 6 {
		id := h.InitializeHttpContext()
		if a := h.CallOnRequestHeaders(id, [][2]string{{":method", "GET"}, {":path", "/"}, {"x-user", "alice"}}, true); a != types.ActionPause {
			t.Fatalf("request %d not paused: %v", i, a)
		}
		deliverToWebdis(t, h, webdis, id)
		denied := h.GetSentLocalResponse(id) != nil
		if denied != (i >= 3) {
			t.Fatalf("request %d: denied %v", i, denied)
		}
		// Envoy sends a local reply through the filter's encoder callbacks.
		h.CallOnResponseHeaders(id, [][2]string{{":status", "200"}}, false)
		// No CompleteHttpContext: proxy_on_log never comes.
	}
	if n := proxyhost.LiveStreams() - before; n != 0 {
		t.Fatalf("%d streams still held after their responses", n)
	}
}

// A stream whose context the proxy deletes while its Redis call is out,
// with proxy_on_log deferred past proxy_on_delete, is released when the
// reply comes, counted, and nothing is done to the deleted context.
func TestAbandonedStreamReleased(t *testing.T) {
	config := `{"redis":{"cluster":"redis","timeout":"3s","key_prefix":"` + redistest.Prefix(t) + `"},"circuit_breaker":{"failures":0},
		"rules":[{"name":"api","key":[{"source":"constant","value":"all"}],"limits":[{"algorithm":"sliding_log","limit":5,"window":"1s"}]}]}`
	h := startBuild(t, "higress", wasmhost.Config{Workers: 1, DeferredLog: true}, config, blackhole(t)).h
	client := &http.Client{Timeout: 200 * time.Millisecond}
	if _, err := client.Get(h.URL() + "/"); err == nil {
		t.Fatal("the request was answered although Redis never replies")
	}
	waitFor(t, "the abandoned stream to be released", func() bool {
		v, _ := h.Metric("ratelimit.streams.abandoned")
		return v == 1
	})
	for _, l := range h.Logs() {
		if strings.Contains(l.Message, "effective context") || strings.Contains(l.Message, "resume") {
			t.Errorf("the filter acted on a deleted context: %s", l.Message)
		}
	}
}
