package e2e

// Higress's Redis client as wasmhost models it (wasmhost/redis.go): an
// init that fails until the cluster exists, AUTH and SELECT replies thrown
// away, one timeout per pipelined connection, and no cluster routing. The
// Higress build must limit once it can, recover from a lost
// authentication, not let one slow call open its breaker, and say clearly
// what is wrong with a raw Redis Cluster.

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

func oneLimit(prefix, redis, top string) string {
	return fmt.Sprintf(`{%s"redis":{"cluster":"redis","timeout":"5s","key_prefix":%q%s},
		"rules":[{"name":"api","key":[{"source":"header","name":"x-user"}],"limits":[{"algorithm":"sliding_log","limit":2,"window":"1m"}]}]}`,
		top, prefix, redis)
}

// decided waits until a request for user is decided by Redis (it carries
// rate-limit headers), and returns that outcome.
func decided(t *testing.T, tg *wasmTarget, user string) outcome {
	t.Helper()
	deadline := time.Now().Add(waitGuard)
	for {
		o := tg.send(t, map[string]string{"x-user": user})
		if o.headers["ratelimit"] != "" {
			return o
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request was decided within %v; last: %+v", waitGuard, o)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The cluster does not exist when the plugin starts: the plugin starts all
// the same, requests get the failure mode, and once the cluster appears the
// retried init succeeds and limits apply.
func TestRedisInitBeforeTheClusterExists(t *testing.T) {
	t.Parallel()
	// One VM in each test here, so that every call shares one Redis connection.
	tg := startHost(t, wasmhost.Config{Module: module, PluginConfig: []byte(oneLimit(redistest.Prefix(t), "", `"failure_mode":"deny",`)), Workers: 1})
	for range 3 {
		o := tg.send(t, user("alice"))
		expect(t, o, 503)
		if o.body != `{"error":"ratelimit_unavailable"}`+"\n" {
			t.Fatalf("body %q", o.body)
		}
	}
	if tg.metric("ratelimit.redis.init_failures") < 1 || tg.metric("ratelimit.redis.uninitialized") != 3 ||
		tg.metric("ratelimit.failure_mode.denied") != 3 || len(tg.h.RedisCalls()) != 0 {
		t.Fatalf("metrics %v, calls %v", tg.h.Metrics(), tg.h.RedisCalls())
	}
	if !strings.Contains(strings.Join(tg.h.GuestLogs(wasmhost.LogWarn), "\n"), "the proxy does not know the cluster on this worker (yet)") {
		t.Fatalf("no log line for the failed init: %q", tg.h.GuestLogs(wasmhost.LogWarn))
	}
	tg.h.AddRedisCluster("redis", server.Addr)
	expect(t, decided(t, tg, "alice"), 200, "ratelimit", `"api";r=1;t=60`)
	expect(t, tg.send(t, user("alice")), 200, "ratelimit", `"api";r=0;t=60`)
	expect(t, tg.send(t, user("alice")), 429)
}

// A password Redis refuses shows as -NOAUTH replies (Higress throws the
// AUTH reply away): requests get the failure mode, and the filter redoes
// the init and sends AUTH, at most once per second. Once Redis takes the
// password, the filter decides again, on the same connection. A rebuilt
// cluster entry, which forgets the init, recovers the same way.
func TestNoAuthRecovers(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--requirepass", "old")
	admin := redistest.NewClient(srv.Addr, redistest.Options{Password: "old"})
	defer admin.Close()
	tg := startBuild(t, "higress", wasmhost.Config{Workers: 1}, oneLimit(redistest.Prefix(t), `,"password":"new"`, ""), srv.Addr)
	for range 3 {
		o := tg.send(t, user("alice"))
		expect(t, o, 200)
		if o.headers["ratelimit"] != "" {
			t.Fatal("decided with a refused password")
		}
	}
	logs := func() string { return strings.Join(tg.h.GuestLogs(wasmhost.LogInfo), "\n") }
	if !strings.Contains(logs(), "NOAUTH Authentication required") {
		t.Fatalf("the filter did not log NOAUTH: %q", logs())
	}
	if _, err := admin.Do("CONFIG", "SET", "requirepass", "new"); err != nil {
		t.Fatal(err)
	}
	expect(t, decided(t, tg, "alice"), 200, "ratelimit", `"api";r=1;t=60`)
	if r := tg.metric("ratelimit.redis.reinits"); r < 1 {
		t.Fatalf("%d re-inits", r)
	}
	if s := tg.h.RedisClientStats("redis"); s.Connections != 1 {
		t.Fatalf("stats %+v; want the one connection, authenticated by the filter's AUTH", s)
	}
	if !strings.Contains(logs(), "AUTH accepted") {
		t.Fatalf("logs %q", logs())
	}

	tg.h.RebuildRedisCluster("redis")
	expect(t, decided(t, tg, "bob"), 200, "ratelimit", `"api";r=1;t=60`)
	if tg.h.Traps() != 0 {
		t.Fatal("trap")
	}
}

// One slow moment in Redis makes the connection's timeout fail every call
// pending on it at once. They were in flight together, so they count as one
// failure toward circuit_breaker.failures, and the breaker stays closed.
// Redis stalls (a proxy holds every command) until all the calls have
// failed, however long that takes. The checks assume the calls went out
// within two timeouts of each other (so at most two timeouts, two failures
// toward the breaker's three), so they are timed.
func TestSlowRedisDoesNotOpenTheBreaker(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	timed(t, 2*timeout, func(t *attempt) {
		p := redistest.StartProxy(t.T, server.Addr)
		config := strings.Replace(oneLimit(redistest.Prefix(t), "", `"circuit_breaker":{"failures":3},`), `"timeout":"5s"`, `"timeout":"1s"`, 1)
		tg := startBuild(t.T, "higress", wasmhost.Config{Workers: 1}, config, p.Addr)
		expect(t, tg.send(t, user("warm")), 200, "ratelimit", `"api";r=1;t=60`) // connected
		p.SetStall(true)
		const n = 6
		outcomes := make([]outcome, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outcomes[i] = tg.send(t.T, user(fmt.Sprint("u", i)))
			}()
		}
		wg.Wait()
		p.SetStall(false)
		for i, o := range outcomes {
			if o.status != 200 || o.headers["ratelimit"] != "" {
				t.Fatalf("request %d during the stall: %+v; want the failure mode", i, o)
			}
		}
		// The tick's epoch read (one in flight at a time, one per second)
		// fails with them when sent during the stall; it is no decision,
		// and counts toward no breaker.
		s := tg.h.RedisClientStats("redis")
		if reads := tg.metric("ratelimit.epoch.failed"); s.FailedByTimeout != n+reads || s.Timeouts > 2 {
			t.Fatalf("stats %+v, %d epoch reads failed; want the %d calls failed by the connection's timeout", s, reads, n)
		}
		if o, e := tg.metric("ratelimit.circuit_breaker.opened"), decisionErrors(tg); o != 0 || e != n {
			t.Fatalf("opened %d, redis errors %d; want 0 and %d", o, e, n)
		}
		expect(t, decided(t.T, tg, "after"), 200, "ratelimit", `"api";r=1;t=60`)
		if sk := tg.metric("ratelimit.circuit_breaker.skipped"); sk != 0 {
			t.Fatalf("%d calls skipped by the breaker", sk)
		}
	})
}

// With cluster_mode against a raw Redis Cluster, Higress's client sends
// every call to the node it points at; the others' keys get -MOVED. The
// filter applies the failure mode, counts it, and logs what to put in
// between.
func TestClusterModeAgainstARawCluster(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3)
	prefix := redistest.Prefix(t)
	tg := startBuild(t, "higress", wasmhost.Config{Workers: 1}, oneLimit(prefix, `,"cluster_mode":true`, `"failure_mode":"deny","circuit_breaker":{"failures":0},`),
		cluster.Nodes[0].Addr)
	moved := 0
	for i := range 12 {
		u := fmt.Sprint("user", i)
		owner, err := cluster.MasterFor(prefix + "{api|" + u + "}:0")
		if err != nil {
			t.Fatal(err)
		}
		o := tg.send(t, user(u))
		switch {
		case owner == cluster.Nodes[0]:
			expect(t, o, 200, "ratelimit", `"api";r=1;t=60`)
		default:
			moved++
			expect(t, o, 503)
		}
	}
	if moved == 0 || tg.metric("ratelimit.redis.redirected") != int64(moved) {
		t.Fatalf("%d keys elsewhere, %d counted redirections", moved, tg.metric("ratelimit.redis.redirected"))
	}
	if logs := strings.Join(tg.h.GuestLogs(wasmhost.LogWarn), "\n"); !strings.Contains(logs, "put a cluster-aware proxy between them (Envoy's redis_proxy on loopback") {
		t.Fatalf("logs %q", logs)
	}
}
