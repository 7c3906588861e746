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
	"context"
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
	isOn := map[string]bool{}
	for _, u := range on {
		isOn[u] = true
	}

	errs0 := errorStats(t, c)
	l := newLoad(t, 8, th)
	stop := l.start(t, append(append([]string(nil), on...), off...), 8)
	waitFor(t, "the load to be going", func() bool { return len(l.answers()) >= 300 })
	crash := time.Now()
	if err := c.Crash(m0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.WaitPromoted(ctx, r0); err != nil {
		t.Fatal(err)
	}
	promoted := time.Now()
	var resumed time.Time
	waitFor(t, "decisions on the promoted replica", func() bool {
		for _, a := range l.answers() {
			if isOn[a.user] && a.status == 200 && a.sent.After(promoted) {
				resumed = a.done
				return true
			}
		}
		return false
	})
	n := len(l.answers())
	waitFor(t, "more answers", func() bool { return len(l.answers()) >= n+100 })
	stop() // fails the test if a request went unanswered (within waitGuard)

	got := l.answers()
	var unavailableOn, unavailableOff, lastSecond int
	var firstOff answer
	var first503, last503 time.Time
	for _, a := range got {
		switch {
		case a.status != 200 && a.status != 503:
			t.Errorf("%s: status %d; want 200 or 503", a.user, a.status)
		case a.status == 503 && a.done.Before(crash):
			t.Errorf("%s: 503 %v before the crash", a.user, crash.Sub(a.done))
		case a.status == 503 && !isOn[a.user]:
			if unavailableOff++; unavailableOff == 1 {
				firstOff = a
			}
		case a.status == 503:
			unavailableOn++
			if first503.IsZero() {
				first503 = a.done
			}
			last503 = a.done
		case isOn[a.user] && a.sent.Before(crash) && a.done.After(crash.Add(-time.Second)):
			lastSecond++
		}
	}
	errs := errorStats(t, c)
	for k, n := range errs0 {
		errs[k] -= n
	}
	// A live master answers -CLUSTERDOWN while it sees too few masters
	// (its cluster bus starved past cluster-node-timeout: seen once, with
	// the promotion after 12.8 s); the filter retries that until
	// redis.timeout, then applies failure_mode. Any other 503 there is
	// the filter's or the proxy's fault.
	if unavailableOff > int(errs["CLUSTERDOWN"]) {
		t.Errorf("%d answers 503 on live masters' slots (the first %s at %v after the crash), %d -CLUSTERDOWN from the nodes; want none but those",
			unavailableOff, firstOff.user, firstOff.done.Sub(crash), errs["CLUSTERDOWN"])
	} else if unavailableOff > 0 {
		t.Logf("%d answers 503 on live masters' slots (the first %s at %v after the crash): the nodes answered -CLUSTERDOWN %d times",
			unavailableOff, firstOff.user, firstOff.done.Sub(crash), errs["CLUSTERDOWN"])
	}
	if unavailableOn == 0 {
		t.Errorf("no request on the dead master's slots got the failure mode (503) during the election")
	}
	admitted := countBy(got, 200)
	lost := 0
	for _, u := range on {
		lost += max(0, admitted[u]-ownerZcard(t, c, stateKey(prefix, u)))
	}
	if lost > lastSecond {
		t.Errorf("crash: %d admissions lost; want at most the %d of the second before the crash", lost, lastSecond)
	}
	expect(t, th.send(t, userRequest(on[0])), 200)

	window := "no 503"
	if !first503.IsZero() {
		window = fmt.Sprintf("503s from %v to %v after the crash", first503.Sub(crash).Round(time.Millisecond),
			last503.Sub(crash).Round(time.Millisecond))
	}
	t.Logf("crash behind redis_proxy: promoted after %v, decisions again after %v; %d answers 503 on the dead master's slots "+
		"(%s), %d elsewhere; %d admissions lost of %d in the second before the crash; statuses %v",
		promoted.Sub(crash).Round(time.Millisecond), resumed.Sub(crash).Round(time.Millisecond), unavailableOn, window,
		unavailableOff, lost, lastSecond, statuses(got))
	t.Logf("metrics %v, breaker opened %d times; redis_proxy stats %+v; the nodes' error replies %v", metricsOf(th),
		th.metric("ratelimit.circuit_breaker.opened"), th.h.RedisClusterStats("redis"), errs)
	if unavailableOff > 0 {
		w := slices.Compact(slices.Sorted(slices.Values(th.h.GuestLogs(wasmhost.LogWarn))))
		t.Logf("the filter's warnings (first 10 of %d kinds): %q", len(w), w[:min(10, len(w))])
	}
}
