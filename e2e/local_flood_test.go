package e2e

import (
	"fmt"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// floodRules: a sliding log of 2 per hour on /two and of 1 per hour on
// /one, keyed on the query's k. A key sent once to /two still admits; a
// key sent once to /one denies.
const floodRules = `[
	{"name":"two","match":{"path":"/two"},"key":[{"source":"query","name":"k"}],
	 "limits":[{"algorithm":"sliding_log","limit":2,"window":"1h"}]},
	{"name":"one","match":{"path":"/one"},"key":[{"source":"query","name":"k"}],
	 "limits":[{"algorithm":"sliding_log","limit":1,"window":"1h"}]}]`

// failure_mode: local under a flood of keys, through HTTP, in both builds
// with their Redis killed: a client the VM denied stays denied after
// max_keys + 8 other keys that still admit (they push each other out),
// and again after max_keys + 8 keys that each deny (no room: each is
// decided afresh, not held). The VM never holds more than max_keys states.
func TestLocalFloodKeepsDenialE2E(t *testing.T) {
	const maxKeys = 8
	for _, kind := range moduleKinds {
		t.Run(kind, func(t *testing.T) {
			r := redistest.NewProc(t)
			r.Start()
			// A long timeout: the first request must be decided by Redis,
			// however busy the machine; the killed Redis refuses at once.
			config := fmt.Sprintf(`{"redis":{"cluster":"redis","timeout":"10s","key_prefix":%q},"failure_mode":"local",
				"local_fallback":{"share":1,"max_keys":%d},"circuit_breaker":{"failures":1,"backoff":"10m"},"rules":%s}`,
				redistest.Prefix(t), maxKeys, floodRules)
			w := startBuild(t, kind, wasmhost.Config{Workers: 1}, config, r.Addr)
			get := func(path string) outcome { return w.send(t, map[string]string{":path": path}) }
			if o := get("/two?k=up"); o.status != 200 || w.metric("ratelimit.failure_mode.local_allowed") != 0 {
				t.Fatalf("Redis up decides: %+v", o)
			}
			r.Kill()
			waitFor(t, "a local decision", func() bool {
				return get("/two?k=a").status == 200 && w.metric("ratelimit.failure_mode.local_allowed") > 0
			})
			for i := 0; get("/two?k=a").status == 200; i++ {
				if i == 2 {
					t.Fatal("a admitted beyond its limit of 2")
				}
			}
			denied := func(when string) {
				t.Helper()
				if o := get("/two?k=a"); o.status != 429 || o.headers["retry-after"] == "" {
					t.Fatalf("a %s: %+v, want still denied", when, o)
				}
				if n := w.metric("ratelimit.failure_mode.local_states"); n > maxKeys {
					t.Fatalf("a %s: %d states held, max_keys %d", when, n, maxKeys)
				}
			}
			denied("once spent")
			for i := range maxKeys + 8 {
				if o := get(fmt.Sprintf("/two?k=f%d", i)); o.status != 200 {
					t.Fatalf("f%d: %+v", i, o)
				}
			}
			denied("after a flood of keys that still admit")
			if n := w.metric("ratelimit.failure_mode.local_evicted"); n != 9 {
				t.Fatalf("%d states pushed out, want 9: one per f beyond the 7 that fit beside a", n)
			}
			for i := range maxKeys + 8 {
				if o := get(fmt.Sprintf("/one?k=g%d", i)); o.status != 200 {
					t.Fatalf("g%d: %+v", i, o)
				}
			}
			denied("after a flood of keys that deny")
			// g0 to g6 push out the 7 f's left; then only denying states.
			if n, m := w.metric("ratelimit.failure_mode.local_evicted"), w.metric("ratelimit.failure_mode.local_unheld"); n != 16 || m != 9 {
				t.Fatalf("evicted %d, decided without being held %d; want 16 and 9", n, m)
			}
			if n := w.metric("ratelimit.failure_mode.local_states"); n != maxKeys {
				t.Fatalf("%d states held, want max_keys %d", n, maxKeys)
			}
			t.Logf("%s: evicted %d, unheld %d, states %d of max_keys %d", kind, w.metric("ratelimit.failure_mode.local_evicted"),
				w.metric("ratelimit.failure_mode.local_unheld"), w.metric("ratelimit.failure_mode.local_states"), maxKeys)
		})
	}
}
