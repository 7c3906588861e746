package e2e

// Test 3c of issue 32 for the Higress build through its documented path
// (docs/proxies.md, "Redis Cluster behind Higress"): the filter sends
// EVALSHA to redis_proxy (wasmhost's faithful model), which routes each
// call by slot. A master (3 masters, a replica each) crashes under load:
// the proxy answers "upstream failure" for its slots, which get
// failure_mode (deny: 503), while other slots keep deciding; the model
// reloads its slot map after the node's failed calls, so once the replica
// is promoted its slots decide there again. Writes not yet replicated are
// lost: at most what was admitted in the second before the crash.
// Behind redis_proxy the filter has one circuit breaker for the whole
// cluster, so the test turns it off (see the config).
// Windows and losses are logged as measured; only bounds are asserted.

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

func TestClusterProxyFailover(t *testing.T) {
	t.Parallel()
	c := redistest.StartClusterWith(t, redistest.ClusterOptions{Masters: 3, Replicas: 1})
	prefix := redistest.Prefix(t)
	// Behind redis_proxy the filter sees one node, so one circuit breaker:
	// with the default (5 failures) the dead master's failures open it
	// now and then, and every slot gets 503 for its backoff (seen: 2
	// openings, 493 such 503s in one run). Off, only the dead master's
	// slots fail.
	config := fmt.Sprintf(`{"failure_mode":"deny","headers":"both","circuit_breaker":{"failures":0},`+
		`"redis":{"cluster":"redis","command":"evalsha","timeout":"2s","key_prefix":%q,"cluster_mode":true},"rules":%s}`,
		prefix, failoverRules)
	// No periodic reload within the test (cluster_refresh_rate): only the
	// reload after the dead node's failed calls (failure_refresh_threshold)
	// can bring its slots to the promoted replica.
	th := startHost(t, wasmhost.Config{Module: module, PluginConfig: []byte(config),
		RedisClusterProxy: map[string][]string{"redis": c.Addrs()}, RedisProxyFaithful: true,
		RedisClusterRefresh: 10 * time.Minute})
	m0 := c.Nodes[0]
	r0, err := c.ReplicaOf(m0)
	if err != nil {
		t.Fatal(err)
	}
	on, off := splitUsers(t, c, prefix, "p", m0, 12)
	run := crashUnderLoad(t, c, prefix, m0, r0, on, off, th)
	expect(t, th.send(t, userRequest(on[0])), 200)

	t.Logf("crash behind redis_proxy: %v", run)
	t.Logf("metrics %v, breaker opened %d times; redis_proxy stats %+v; the nodes' error replies %v", metricsOf(th),
		th.metric("ratelimit.circuit_breaker.opened"), th.h.RedisClusterStats("redis"), run.errs)
	if run.unavailableOff > 0 {
		w := slices.Compact(slices.Sorted(slices.Values(th.h.GuestLogs(wasmhost.LogWarn))))
		t.Logf("the filter's warnings (first 10 of %d kinds): %q", len(w), w[:min(10, len(w))])
	}
}
