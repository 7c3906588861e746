package e2e

// Health from the first tick, without traffic (docs/metrics.md): each
// VM's tick reads the epoch, which is its probe of Redis.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// decisionErrors is ratelimit.redis.errors less the failed epoch reads
// (ratelimit.epoch.failed), which each VM's tick adds, traffic or not.
func decisionErrors(tg target) int64 {
	return tg.metric("ratelimit.redis.errors") - tg.metric("ratelimit.epoch.failed")
}

// A proxy whose Redis is not there from its start, and which serves no
// request: in both builds, ratelimit.redis.healthy is 0 while
// ratelimit.redis.errors grows and an error line says Redis is
// unreachable; once redis-server listens on that port, the gauge becomes
// the number of workers (2), still without a request.
func TestHealthWithoutTraffic(t *testing.T) {
	t.Parallel()
	for _, kind := range moduleKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			p := redistest.NewProc(t) // nothing listens on p.Addr until Start
			config := fmt.Sprintf(`{"redis":{"cluster":"redis","timeout":"2s","key_prefix":%q},%s}`, redistest.Prefix(t), observedRules)
			tg := startBuild(t, kind, wasmhost.Config{}, config, p.Addr)
			waitFor(t, "ratelimit.redis.errors > 2 with Redis unreachable and no traffic", func() bool {
				return tg.metric("ratelimit.redis.errors") > 2
			})
			if g := healthGauge(t, tg); g != 0 {
				t.Fatalf("ratelimit.redis.healthy %d while no VM ever reached Redis", g)
			}
			subject := map[string]string{"higress": `ratelimit: redis cluster "redis" unreachable (`,
				"stock": `ratelimit: redis through webdis cluster "webdis" unreachable (`}[kind]
			expectHealthLine(t, tg, subject, "failure_mode allow: requests pass unlimited")

			p.Start()
			waitFor(t, "ratelimit.redis.healthy 2 (both VMs reach Redis), with no traffic", func() bool {
				return healthGauge(t, tg) == 2
			})
			if n := tg.metric("ratelimit.rule.api.allowed") + tg.metric("ratelimit.failure_mode.allowed"); n != 0 {
				t.Fatalf("%d requests counted; the test sends none", n)
			}
		})
	}
}

// The Higress build with the shipped ACL users and a wrong password:
// before any request, the first error line says Redis refused the AUTH
// and names the settings to check; no line says the filter's user lacks
// a right; the gauge is 0.
func TestWrongPasswordFirstLineIsAUTH(t *testing.T) {
	t.Parallel()
	srv := redistest.StartACL(t, renderACL(t, "users.acl"),
		redistest.Options{Username: "ratelimit-operator", Password: operatorPassword})
	tg := startBuild(t, "higress", wasmhost.Config{}, fmt.Sprintf(`{"failure_mode":"deny",
		"redis":{"cluster":"redis","username":"ratelimit-filter","password":"WRONG","timeout":"2s","key_prefix":%q},%s}`,
		redistest.Prefix(t), observedRules), srv.Addr)
	waitFor(t, "an error line, and the filter's own AUTH refused", func() bool {
		return len(tg.h.GuestLogs(wasmhost.LogError)) > 0 &&
			strings.Contains(strings.Join(tg.h.GuestLogs(wasmhost.LogWarn), "\n"), "Redis refused redis.username/redis.password: WRONGPASS")
	})
	first := tg.h.GuestLogs(wasmhost.LogError)[0]
	if !strings.Contains(first, `ratelimit: redis cluster "redis" refused AUTH (NOAUTH Authentication required.): check redis.username/redis.password`) {
		t.Fatalf("the first error line %q; want the refused AUTH", first)
	}
	for _, l := range tg.h.GuestLogs(wasmhost.LogTrace) {
		if strings.Contains(l, "acl|whoami") {
			t.Fatalf("a line says a right is missing: %q", l)
		}
	}
	if g := healthGauge(t, tg); g != 0 {
		t.Fatalf("ratelimit.redis.healthy %d with the password refused", g)
	}
}
