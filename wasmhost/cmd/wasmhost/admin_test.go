package main

import (
	"context"
	"io"
	"log"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/dist"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// /ready is 503 until the VMs are configured, 200 "LIVE" then, and 503
// again once the command shuts down; /stats is empty before.
func TestReadyFollowsTheHost(t *testing.T) {
	a, err := startAdmin("127.0.0.1:0", log.New(io.Discard, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	if got := adminGet(t, a.URL()+"/ready", 503); got != "PRE_INITIALIZING\n" {
		t.Errorf("/ready before the host: %q", got)
	}
	if got := adminGet(t, a.URL()+"/stats", 200); got != "" {
		t.Errorf("/stats before the host: %q", got)
	}
	wasm, err := dist.Read(dist.Probe)
	if err != nil {
		t.Fatal(err)
	}
	cache, _ := dist.CacheDir()
	mod, err := wasmhost.Compile(context.Background(), wasm, wasmhost.WithCacheDir(cache))
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close(context.Background())
	h, err := wasmhost.Start(context.Background(), wasmhost.Config{Module: mod, Upstream: "http://127.0.0.1:1", Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	a.setHost(h)
	if got := adminGet(t, a.URL()+"/ready", 200); got != "LIVE\n" {
		t.Errorf("/ready: %q", got)
	}
	if got := adminGet(t, a.URL()+"/stats", 200); !strings.Contains(got, "wasmcustom.probe_configured: 2\n") ||
		!strings.Contains(got, "wasmcustom.probe_reply_bytes: No recorded values\n") {
		t.Errorf("/stats: %q, want the probe's counters (canary and VM) and its empty histogram", got)
	}
	a.draining()
	if got := adminGet(t, a.URL()+"/ready", 503); got != "DRAINING\n" {
		t.Errorf("/ready while draining: %q", got)
	}
}

func TestPrometheusNames(t *testing.T) {
	for in, want := range map[string]string{
		"ratelimit.rule.api-v2.allowed": "ratelimit_rule_api_v2_allowed",
		"probe_requests":                "probe_requests",
		"9lives":                        "_9lives",
		"a:b/c d":                       "a_b_c_d",
	} {
		if got := promName(in); got != want {
			t.Errorf("promName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestQuantiles(t *testing.T) {
	samples := make([]uint64, 100)
	for i := range samples {
		samples[i] = uint64(100 - i) // 100 down to 1
	}
	got := quantiles(samples)
	for _, want := range []string{"P0(nan,1) ", "P50(nan,51) ", "P99(nan,99) ", "P100(nan,100)"} {
		if !strings.Contains(got, want) {
			t.Errorf("quantiles: %q lacks %q", got, want)
		}
	}
	if quantiles(nil) != "No recorded values" {
		t.Errorf("empty: %q", quantiles(nil))
	}
}
