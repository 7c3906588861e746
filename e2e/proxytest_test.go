package e2e

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/proxytest"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/proxyhost"
)

// The SDK's own emulator is a second, independent host. It runs the
// lifecycle natively (proxyhost under the SDK's mock host calls) and as the
// compiled stock module under its wazero runner. Its wasm runner cannot
// deliver an HTTP callout's response to the guest, so there the test stops
// at the dispatched callout.
func TestSDKEmulatorLifecycle(t *testing.T) {
	webdis := redistest.StartWebdis(t, server.Addr)
	for _, mode := range []string{"native", "wasm"} {
		// Retry-After 60 holds exactly when both requests are decided
		// within a second: timed.
		t.Run(mode, func(t *testing.T) { timed(t, time.Second, func(t *attempt) { sdkLifecycle(t, mode, webdis) }) })
	}
}

// sdkLifecycle is one run of TestSDKEmulatorLifecycle.
func sdkLifecycle(t *attempt, mode, webdis string) {
	config := `{"redis":{"transport":"webdis","cluster":"webdis","username":"ratelimit","password":"s3cret","key_prefix":"` + redistest.Prefix(t) + `"},
		"rules":[{"name":"api","key":[{"source":"header","name":"x-user"}],"limits":[{"algorithm":"sliding_log","limit":1,"window":"1m"}]}]}`
	newVM := func() types.VMContext {
		if mode == "native" {
			return proxyhost.NewVMContext()
		}
		vm, err := proxytest.NewWasmVMContext(stockWasm)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { vm.Close() })
		return vm
	}

	bad, reset := proxytest.NewHostEmulator(proxytest.NewEmulatorOption().WithVMContext(newVM()).
		WithPluginConfiguration([]byte(`{"redis":{"cluster":"redis"},"rules":[]}`)))
	if bad.StartPlugin() != types.OnPluginStartStatusFailed {
		t.Fatal("a bad configuration started")
	}
	if logs := strings.Join(bad.GetCriticalLogs(), "\n"); !strings.Contains(logs, "rules: must be a non-empty array") {
		t.Fatalf("critical logs: %q", logs)
	}
	reset()

	h, reset := proxytest.NewHostEmulator(proxytest.NewEmulatorOption().WithVMContext(newVM()).
		WithPluginConfiguration([]byte(config)).WithProperty([]string{"source", "address"}, []byte("10.1.2.3:5555")))
	defer reset()
	if h.StartPlugin() != types.OnPluginStartStatusOK {
		t.Fatalf("plugin start failed: %q", h.GetCriticalLogs())
	}
	send := func() uint32 {
		id := h.InitializeHttpContext()
		if a := h.CallOnRequestHeaders(id, [][2]string{{":method", "GET"}, {":path", "/"}, {"x-user", "alice"}}, true); a != types.ActionPause {
			t.Fatalf("request not paused for the callout: %v", a)
		}
		return id
	}
	id := send()
	callouts := h.GetCalloutAttributesFromContext(id)
	if mode == "wasm" {
		// The wasm runner files callouts under whichever context the
		// native side last saw active.
		for ctx := uint32(0); len(callouts) == 0 && ctx <= id+1; ctx++ {
			callouts = h.GetCalloutAttributesFromContext(ctx)
		}
	}
	if len(callouts) != 1 {
		t.Fatalf("%d callouts dispatched", len(callouts))
	}
	c := callouts[0]
	if c.Upstream != "webdis" || !hasHeader(c.Headers, "authorization", "Basic cmF0ZWxpbWl0OnMzY3JldA==") ||
		!bytes.HasPrefix(c.Body, []byte("FCALL/"+algorithms.Library.Decide+"/2/")) {
		t.Fatalf("callout %+v body %q", c, c.Body)
	}
	if mode == "wasm" {
		return
	}
	deliver := func(id uint32) { deliverToWebdis(t.T, h, webdis, id) }
	deliver(id)
	if h.GetCurrentHttpStreamAction(id) != types.ActionContinue || h.GetSentLocalResponse(id) != nil {
		t.Fatal("the first request was not resumed")
	}
	h.CallOnResponseHeaders(id, [][2]string{{":status", "200"}}, false)
	if !hasHeader(h.GetCurrentResponseHeaders(id), "ratelimit", `"api";r=0;t=60`) {
		t.Fatalf("response headers %v", h.GetCurrentResponseHeaders(id))
	}
	h.CompleteHttpContext(id)

	id = send()
	deliver(id)
	if r := h.GetSentLocalResponse(id); r == nil || r.StatusCode != 429 || !hasHeader(r.Headers, "retry-after", "60") {
		t.Fatalf("second request: %+v", r)
	}
	h.Tick() // the filter's counters reach the host on its tick
	if n, _ := h.GetCounterMetric("ratelimit.rule.api.denied"); n != 1 {
		t.Fatalf("denied metric %d", n)
	}
}

func hasHeader(h [][2]string, name, value string) bool {
	for _, kv := range h {
		if strings.EqualFold(kv[0], name) && kv[1] == value {
			return true
		}
	}
	return false
}

// deliverToWebdis carries each callout of a stream to the real Webdis and
// back, natively.
func deliverToWebdis(t *testing.T, h proxytest.HostEmulator, webdis string, id uint32) {
	t.Helper()
	for done := 0; done < len(h.GetCalloutAttributesFromContext(id)); done++ {
		c := h.GetCalloutAttributesFromContext(id)[done]
		req, _ := http.NewRequest("POST", "http://"+webdis+"/", bytes.NewReader(c.Body))
		req.SetBasicAuth(redistest.WebdisUser, redistest.WebdisPassword)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		h.CallOnHttpCallResponse(c.CalloutID, [][2]string{{":status", "200"}}, nil, body)
	}
}
