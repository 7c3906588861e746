package wasmhost_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// Start configures the plugin on a throwaway canary VM first, as Envoy
// does: the probe counts one start per VM plus the canary's, and only the
// workers see proxy_on_done.
func TestCanaryConfiguresFirstAndIsDropped(t *testing.T) {
	h, err := wasmhost.Start(context.Background(), wasmhost.Config{Module: module(t, "probe"), Upstream: newUpstream(t).URL,
		Workers: 2, PluginConfig: probeConfig(t, map[string]any{"tick_ms": 5})})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := h.Metric("probe_configured"); n != 3 {
		t.Errorf("probe_configured = %d, want 3 (canary and 2 workers)", n)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	done := map[int]int{}
	for _, e := range h.Logs() {
		if e.Message == "probe plugin done" {
			done[e.VM]++
		}
	}
	if len(done) != 2 || done[0] != 1 || done[1] != 1 {
		t.Errorf("proxy_on_done by VM: %v, want once on each worker and never on the canary", done)
	}
}

// A configuration the canary rejects fails Start before any worker VM runs.
func TestCanaryRejectsConfiguration(t *testing.T) {
	var logs strings.Builder
	_, err := wasmhost.Start(context.Background(), wasmhost.Config{Module: module(t, "probe"), Upstream: newUpstream(t).URL,
		Workers: 2, PluginConfig: probeConfig(t, map[string]any{"fail": "bad config"}), LogWriter: &logs})
	if err == nil || err.Error() != "host: canary vm: plugin start failed: bad config" {
		t.Fatalf("Start: %v, want the canary's plugin start failure", err)
	}
	if strings.Contains(logs.String(), "[vm 0]") || strings.Contains(logs.String(), "[vm 1]") {
		t.Errorf("worker VMs ran:\n%s", logs.String())
	}
}
