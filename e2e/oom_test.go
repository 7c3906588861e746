package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// A full Redis (maxmemory-policy noeviction, used memory above maxmemory;
// docs/redis.md) refuses the library's decide with -OOM. Both builds, the
// stock one through a real Webdis, must give every request failure_mode,
// count each refused call in ratelimit.redis.errors, say at error level
// that Redis is full and that maxmemory is the cause, neither trap nor
// leave a stream paused, and decide again once maxmemory is raised.
func TestFullRedis(t *testing.T) {
	for _, kind := range moduleKinds {
		for _, tc := range []struct {
			mode, extra string
			// want is the status of each of 4 requests of one key while full.
			want [4]int
		}{
			{"deny", "", [4]int{503, 503, 503, 503}},
			{"allow", "", [4]int{200, 200, 200, 200}},
			// The host takes its 2 VMs in turn; each admits its share, 1
			// of the 2 a minute, then denies.
			{"local", `"local_fallback":{"share":0.5},`, [4]int{200, 200, 429, 429}},
		} {
			t.Run(kind+"/"+tc.mode, func(t *testing.T) {
				srv := redistest.Start(t, "--maxmemory-policy", "noeviction")
				config := fmt.Sprintf(`{"failure_mode":%q,%s"circuit_breaker":{"failures":0},"deny_cache":{"max_keys":0},
					"redis":{"cluster":"redis","timeout":"2s","key_prefix":%q},
					"rules":[{"name":"u","key":[{"source":"header","name":"x-user"}],"limits":[{"algorithm":"sliding_counter","limit":2,"window":"1m"}]}]}`,
					tc.mode, tc.extra, redistest.Prefix(t))
				w := startBuild(t, kind, wasmhost.Config{}, config, srv.Addr)
				if o := w.send(t, map[string]string{"x-user": "a"}); o.status != 200 || o.headers["ratelimit"] == "" {
					t.Fatalf("before Redis is full: %+v", o)
				}
				if err := srv.Fill(); err != nil {
					t.Fatal(err)
				}
				errs := w.metric("ratelimit.redis.errors")
				for i := range 4 {
					o := w.send(t, map[string]string{"x-user": "b"})
					if o.status != tc.want[i] {
						t.Fatalf("request %d while full: %d; want %d (%s)", i, o.status, tc.want[i], o.body)
					}
					if tc.mode != "local" && o.headers["ratelimit"] != "" {
						t.Fatalf("request %d while full carries Redis's headers: %+v", i, o)
					}
				}
				if got := w.metric("ratelimit.redis.errors") - errs; got != 4 {
					t.Fatalf("ratelimit.redis.errors rose by %d over 4 refused calls", got)
				}
				if !guestLogged(w, wasmhost.LogError, `is full (OOM command not allowed when used memory > 'maxmemory'.)`,
					"raise maxmemory or free memory, and keep maxmemory-policy noeviction") {
					t.Fatal("no error line says Redis is full")
				}
				if err := srv.Unfill(); err != nil {
					t.Fatal(err)
				}
				if o := w.send(t, map[string]string{"x-user": "c"}); o.status != 200 || o.headers["ratelimit"] == "" {
					t.Fatalf("once maxmemory is raised: %+v; want Redis's decision", o)
				}
			})
		}
	}
}

// guestLogged reports whether a VM logged one line at level holding every
// part.
func guestLogged(w *wasmTarget, level wasmhost.LogLevel, parts ...string) bool {
	for _, l := range w.h.Logs() {
		if l.Source != wasmhost.SourceGuest || l.Level != level {
			continue
		}
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l.Message, p)
		}
		if all {
			return true
		}
	}
	return false
}
