package e2e

import (
	"fmt"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// A client that leaves before the response headers, through the built
// filter in the host: its request costs what on_reset says (reserving 40,
// with a default of 3), as a stream cut mid-response does.
func TestClientGoneBeforeResponseHeaders(t *testing.T) {
	for _, kind := range moduleKinds {
		for _, tc := range []struct {
			onReset        string
			cost, refunded int64
		}{{"reserved", 40, 0}, {"nothing", 0, 40}, {"default", 3, 37}} {
			t.Run(kind+"/"+tc.onReset, func(t *testing.T) {
				prefix := redistest.Prefix(t)
				config := fmt.Sprintf(`{"redis":{"cluster":"redis","key_prefix":%q},"rules":[{"name":"llm",
					"key":[{"source":"header","name":"x-key"}],"limits":[{"algorithm":"sliding_log","limit":100,"window":"1h"}],
					"response_cost":{"header":"x-used","reserve":{"header":"x-max","default":10},"on_reset":%q,"default":3}}]}`,
					prefix, tc.onReset)
				up := newSlotUpstream(t)
				h := startBuild(t, kind, wasmhost.Config{Workers: 1, Upstream: up.URL}, config, server.Addr).h
				metric := func(name string) int64 { v, _ := h.Metric("ratelimit.rule.llm." + name); return v }
				key := prefix + "{llm|k}:0"

				c := hold(h, "never", "x-key", "k", "x-max", "40")
				waitFor(t, "the request at the upstream", func() bool { return up.inFlight.Load() == 1 })
				if got := logUnits(t, key); got != 40 {
					t.Fatalf("admitted: Redis holds %d, want the reservation of 40", got)
				}
				c.cancel() // the client leaves; the upstream never answered
				if status := <-c.done; status != 0 {
					t.Fatalf("the client got a response: %d", status)
				}
				waitFor(t, "the stream's end", func() bool { return metric("stream_reset") == 1 })
				waitFor(t, "its settle", func() bool { return metric("units_refunded") == tc.refunded })
				if got := logUnits(t, key); got != tc.cost {
					t.Errorf("Redis holds %d, want %d", got, tc.cost)
				}
				if n := metric("usage_missing") + metric("units_charged"); n != 0 {
					t.Errorf("usage_missing + units_charged = %d, want 0", n)
				}
			})
		}
	}
}
