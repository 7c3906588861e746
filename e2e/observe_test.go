package e2e

// What operators see (docs/metrics.md, docs/access-log.md): a Redis the
// filter cannot use is said at error level, naming the cluster, what
// failed and the failure mode, and shown in ratelimit.redis.healthy; each
// decided request leaves its decision in the filter state
// wasm.ratelimit.decision.

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// observedRules: one shared key, far from its limit.
const observedRules = `"rules":[{"name":"api","key":[{"source":"constant","value":"all"}],
	"limits":[{"name":"minute","algorithm":"sliding_log","limit":100000,"window":"1m"}]}]`

// healthLines returns the guest's lines at level or above that speak of
// the Redis cluster's health.
func healthLines(tg *wasmTarget, level wasmhost.LogLevel) []string {
	var out []string
	for _, l := range tg.h.GuestLogs(level) {
		if strings.Contains(l, "ratelimit: redis cluster ") || strings.Contains(l, "ratelimit: redis through webdis cluster ") {
			out = append(out, l)
		}
	}
	return out
}

// expectHealthLine fails unless an error line says each of parts.
func expectHealthLine(t *testing.T, tg *wasmTarget, parts ...string) {
	t.Helper()
	for _, l := range healthLines(tg, wasmhost.LogError) {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			return
		}
	}
	t.Fatalf("no error line says %q; the guest's error lines: %q", parts, tg.h.GuestLogs(wasmhost.LogError))
}

// healthGauge is ratelimit.redis.healthy, which must be defined.
func healthGauge(t *testing.T, tg *wasmTarget) int64 {
	t.Helper()
	v, ok := tg.h.Metric("ratelimit.redis.healthy")
	if !ok {
		t.Fatal("ratelimit.redis.healthy is not defined")
	}
	return v
}

// Higress's client pointed at a port nothing listens on: an error line
// names the cluster, "unreachable" and failure_mode allow, and the gauge
// is 0; once Redis listens there, both VMs decide again, each VM that
// said so says it recovered, and the gauge is 2 (one per VM); when Redis
// dies, it falls back to 0.
func TestHealthWrongPortHigress(t *testing.T) {
	t.Parallel()
	p := redistest.NewProc(t) // nothing listens on p.Addr until Start
	config := fmt.Sprintf(`{"redis":{"cluster":"redis","timeout":"2s","key_prefix":%q},%s}`, redistest.Prefix(t), observedRules)
	tg := startBuild(t, "higress", wasmhost.Config{}, config, p.Addr)
	for range 4 {
		if o := tg.send(t, nil); o.status != 200 || o.headers["ratelimit"] != "" {
			t.Fatalf("with nothing on the port: %d %v; want failure_mode allow's 200 without headers", o.status, o.headers)
		}
	}
	expectHealthLine(t, tg, `ratelimit: redis cluster "redis" unreachable (`, "failure_mode allow: requests pass unlimited")
	if g := healthGauge(t, tg); g != 0 {
		t.Fatalf("ratelimit.redis.healthy %d while every call fails", g)
	}

	p.Start()
	waitFor(t, "ratelimit.redis.healthy 2 (both VMs decide)", func() bool {
		tg.send(t, nil)
		return healthGauge(t, tg) == 2
	})
	told := len(healthLines(tg, wasmhost.LogError))
	if n := len(healthLines(tg, wasmhost.LogInfo)) - told; n < 1 || n > told {
		t.Fatalf("%d recovery lines after %d error lines: %q", n, told, healthLines(tg, wasmhost.LogInfo))
	}
	if o := tg.send(t, nil); o.headers["ratelimit"] == "" {
		t.Fatalf("no decision once Redis listens: %d %v", o.status, o.headers)
	}

	p.Kill()
	waitFor(t, "ratelimit.redis.healthy 0 once Redis is gone", func() bool {
		tg.send(t, nil)
		return healthGauge(t, tg) == 0
	})
}

// The stock build with its Webdis gateway on a port nothing listens on.
func TestHealthWrongPortStock(t *testing.T) {
	t.Parallel()
	config := fmt.Sprintf(`{"failure_mode":"deny","redis":{"cluster":"redis","timeout":"2s","key_prefix":%q},%s}`, redistest.Prefix(t), observedRules)
	tg := startBuild(t, "webdis", wasmhost.Config{}, config, refused(t))
	for range 2 {
		expect(t, tg.send(t, nil), 503)
	}
	expectHealthLine(t, tg, `ratelimit: redis through webdis cluster "webdis" unreachable (webdis answered HTTP 50`,
		"failure_mode deny: requests get 503")
	if g := healthGauge(t, tg); g != 0 {
		t.Fatalf("ratelimit.redis.healthy %d while every call fails", g)
	}
}

// A real Webdis in front of a port nothing listens on answers 503 with no
// body: the line says Webdis cannot reach Redis, not that Webdis is down.
func TestHealthRedisDownBehindWebdis(t *testing.T) {
	t.Parallel()
	config := fmt.Sprintf(`{"failure_mode":"deny","redis":{"cluster":"redis","timeout":"2s","key_prefix":%q},%s}`, redistest.Prefix(t), observedRules)
	tg := startBuild(t, "stock", wasmhost.Config{}, config, refused(t))
	for range 2 {
		expect(t, tg.send(t, nil), 503)
	}
	expectHealthLine(t, tg, `ratelimit: redis through webdis cluster "webdis" unreachable (webdis answered HTTP 503: webdis cannot reach Redis behind it): check that Redis runs`)
}

// Redis with the shipped ACL users (the default user off) refuses the
// filter's password: Higress's client throws the AUTH reply away, every
// call is answered -NOAUTH, and the error line says the AUTH was refused.
// Through Webdis, the filter's refused credentials are a 403.
func TestHealthACLUserRefused(t *testing.T) {
	t.Parallel()
	srv := redistest.StartACL(t, renderACL(t, "users.acl"),
		redistest.Options{Username: "ratelimit-operator", Password: operatorPassword})
	prefix := redistest.Prefix(t)
	higress := startBuild(t, "higress", wasmhost.Config{}, fmt.Sprintf(`{"failure_mode":"deny",
		"redis":{"cluster":"redis","username":"ratelimit-filter","password":"wrong","timeout":"2s","key_prefix":%q},%s}`, prefix, observedRules), srv.Addr)
	stock := startBuild(t, "webdis", wasmhost.Config{}, fmt.Sprintf(`{"failure_mode":"deny",
		"redis":{"transport":"webdis","cluster":"webdis","username":%q,"password":"wrong","timeout":"2s","key_prefix":%q},%s}`,
		redistest.WebdisUser, prefix, observedRules), redistest.StartWebdis(t, server.Addr))
	for name, tc := range map[string]struct {
		tg    *wasmTarget
		parts []string
	}{
		"higress": {higress, []string{`ratelimit: redis cluster "redis" refused AUTH (NOAUTH`}},
		"stock":   {stock, []string{`ratelimit: redis through webdis cluster "webdis" refused the filter's credentials or command at Webdis (webdis answered HTTP 403)`}},
	} {
		for range 2 {
			expect(t, tc.tg.send(t, nil), 503)
		}
		expectHealthLine(t, tc.tg, append(tc.parts, "failure_mode deny: requests get 503")...)
		if g := healthGauge(t, tc.tg); g != 0 {
			t.Fatalf("%s: ratelimit.redis.healthy %d while refused", name, g)
		}
	}
}

// Each build leaves the decision in the stream's filter state: admitted,
// denied by Redis, then denied from the deny cache (one VM, so one cache).
func TestDecisionInFilterState(t *testing.T) {
	t.Parallel()
	for _, kind := range moduleKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var states []string
			cfg := wasmhost.Config{Workers: 1, FilterState: func(st map[string][]byte) {
				mu.Lock()
				defer mu.Unlock()
				states = append(states, string(st["wasm.ratelimit.decision"]))
			}}
			config := fmt.Sprintf(`{"redis":{"cluster":"redis","timeout":"5s","key_prefix":%q},"rules":[{"name":"api",
				"key":[{"source":"header","name":"x-user"}],"limits":[{"name":"per-minute","algorithm":"sliding_log","limit":1,"window":"1m"}]}]}`,
				redistest.Prefix(t))
			tg := startBuild(t, kind, cfg, config, server.Addr)
			want := []struct {
				status   int
				decision string
			}{
				{200, "rule=api limit=per-minute remaining=0 decision=allowed"},
				{429, "rule=api limit=per-minute remaining=0 decision=denied reason=rate_limited"},
				{429, "rule=api limit=per-minute remaining=0 decision=denied reason=rate_limited from=deny_cache"},
				{200, ""}, // no x-user: the rule is skipped, nothing is set
			}
			for i, w := range want {
				req := map[string]string{"x-user": "alice"}
				if w.decision == "" {
					req = nil
				}
				expect(t, tg.send(t, req), w.status)
				waitFor(t, "the stream's end", func() bool {
					mu.Lock()
					defer mu.Unlock()
					return len(states) == i+1
				})
				mu.Lock()
				got := states[i]
				mu.Unlock()
				if got != w.decision {
					t.Fatalf("request %d: filter state wasm.ratelimit.decision %q, want %q", i+1, got, w.decision)
				}
			}
		})
	}
}
