package filter

import (
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// tickPumped ticks the plugin and sends what the tick queued to Redis.
func (h *fakeHost) tickPumped() {
	h.plugin.OnTick()
	h.Pump()
}

// Without any request, the tick's epoch read says whether Redis answers:
// a VM that never reached Redis adds 0 to the gauge, counts each failed
// read in ratelimit.redis.errors and logs the error line; once Redis
// answers, it adds its 1 and says so.
func TestProbeHealthWithoutTraffic(t *testing.T) {
	h := newFakeHost(t, healthConfig("allow", ""))
	h.Clock = time.Now()
	h.Redis = redistest.HoldPort(t).Addr() // nothing listens there
	h.plugin.OnTick()
	if g := gauge(h, "ratelimit.redis.healthy"); g != 0 || len(h.Queue) != 1 {
		t.Fatalf("ticked, no answer yet: ratelimit.redis.healthy %d, queue %q; want 0 and the epoch read", g, h.Queue)
	}
	h.Pump()
	for i := 1; i <= 3; i++ {
		if g, e := gauge(h, "ratelimit.redis.healthy"), h.Counters["ratelimit.redis.errors"]; g != 0 || e != uint64(i) {
			t.Fatalf("tick %d, Redis unreachable: ratelimit.redis.healthy %d, ratelimit.redis.errors %d; want 0, %d", i, g, e, i)
		}
		h.Clock = h.Clock.Add(time.Second)
		h.tickPumped()
	}
	lines := linesAt(h, LogError, "")
	if len(lines) != 1 || !strings.Contains(lines[0], `ratelimit: redis cluster "redis" unreachable (redis call failed or timed out): failure_mode allow`) {
		t.Fatalf("error lines %q; want one saying Redis is unreachable", lines)
	}
	if n := h.Counters["ratelimit.epoch.polls"]; n != 4 {
		t.Fatalf("%d epoch reads in 4 ticks", n)
	}

	h.Close()
	h.Redis = server.Addr
	h.Clock = h.Clock.Add(time.Second)
	h.tickPumped()
	if g := gauge(h, "ratelimit.redis.healthy"); g != 1 {
		t.Fatalf("ratelimit.redis.healthy %d once Redis answers; want 1", g)
	}
	if !loggedAt(h, LogInfo, `ratelimit: redis cluster "redis" decides again`) {
		t.Fatalf("no recovery line: %q", h.logs)
	}
	if e := h.Counters["ratelimit.redis.errors"]; e != 4 {
		t.Fatalf("ratelimit.redis.errors %d after the recovery; want the 4 failed reads", e)
	}
}

// While a circuit breaker is open the tick sends no read, so the VM stays
// failing however Redis is; the first read after the backoff says again.
func TestProbeWaitsForTheBreaker(t *testing.T) {
	h := newFakeHost(t, `{"circuit_breaker":{"failures":1,"backoff":"10s"},"redis":{"cluster":"redis"},
	"rules":[{"name":"u","key":[{"source":"header","name":"x-user"}],"limits":[{"algorithm":"sliding_log","limit":1000,"window":"1m"}]}]}`)
	h.Clock = time.Now()
	h.tickPumped()
	if g := gauge(h, "ratelimit.redis.healthy"); g != 1 {
		t.Fatalf("ratelimit.redis.healthy %d after a read; want 1", g)
	}
	h.Down = true
	h.send("x-user=a") // fails: the breaker opens
	h.Down = false
	polls := h.Counters["ratelimit.epoch.polls"]
	for i := range 9 {
		h.Clock = h.Clock.Add(time.Second)
		h.tickPumped()
		if g := gauge(h, "ratelimit.redis.healthy"); g != 0 || h.Counters["ratelimit.epoch.polls"] != polls {
			t.Fatalf("%d s into the backoff: ratelimit.redis.healthy %d, %d reads; want 0 and none", i+1, g, h.Counters["ratelimit.epoch.polls"]-polls)
		}
	}
	h.Clock = h.Clock.Add(time.Second)
	h.tickPumped()
	if g := gauge(h, "ratelimit.redis.healthy"); g != 1 || h.Counters["ratelimit.epoch.polls"] != polls+1 {
		t.Fatalf("after the backoff: ratelimit.redis.healthy %d, %d reads; want 1 and one", g, h.Counters["ratelimit.epoch.polls"]-polls)
	}
}

// A refused password, with Redis requiring one: the first tick's ACL
// WHOAMI and epoch read are answered -NOAUTH. Before any request, the
// first error line says the AUTH was refused and names the setting; no
// line says a right is missing; a second later the filter sends its own
// AUTH, whose refusal is logged too.
func TestRefusedAuthIsTheFirstLine(t *testing.T) {
	srv := redistest.Start(t, "--requirepass", "secret")
	ih := newInitHost(t, healthConfig("allow", `,"password":"WRONG"`))
	ih.Redis = srv.Addr
	ih.plugin.Start()
	ih.tickPumped()
	var first string
	for i, l := range ih.logs {
		if ih.levels[i] >= LogError {
			first = l
			break
		}
	}
	if !strings.Contains(first, `ratelimit: redis cluster "redis" refused AUTH (NOAUTH Authentication required.): check redis.username/redis.password`) {
		t.Fatalf("the first error line %q; want the refused AUTH; logs %q", first, ih.logs)
	}
	if g := gauge(ih.fakeHost, "ratelimit.redis.healthy"); g != 0 || ih.Counters["ratelimit.redis.errors"] != 1 {
		t.Fatalf("ratelimit.redis.healthy %d, counters %v; want 0 and one error", g, ih.Counters)
	}
	ih.Clock = ih.Clock.Add(time.Second)
	ih.tickPumped()
	if !logged(ih.fakeHost, "Redis refused redis.username/redis.password: WRONGPASS") {
		t.Fatalf("the filter's own AUTH: logs %q", ih.logs)
	}
	if logged(ih.fakeHost, "+acl|whoami") {
		t.Fatalf("a line says a right is missing: %q", ih.logs)
	}
}

// A full Redis refuses the decisions' writes but answers the epoch read:
// the read does not end the spell (the gauge stays 0, no recovery line);
// a decision, once memory is freed, does.
func TestProbeReadDoesNotEndRefusedWrites(t *testing.T) {
	srv := fullRedis(t)
	h := newFakeHost(t, healthConfig("allow", ""))
	h.Clock, h.Redis = time.Now(), srv.Addr
	healthy(t, h)
	fill(t, srv)
	h.send("x-user=a")
	polls := h.Counters["ratelimit.epoch.polls"]
	h.Clock = h.Clock.Add(time.Second)
	h.tickPumped() // the decision said how Redis is: no read
	h.Clock = h.Clock.Add(time.Second)
	h.tickPumped()
	if g := gauge(h, "ratelimit.redis.healthy"); g != 0 || h.Counters["ratelimit.epoch.polls"] != polls+1 || h.Counters["ratelimit.epoch.failed"] != 0 {
		t.Fatalf("full, after an epoch read answered: ratelimit.redis.healthy %d, counters %v; want 0", g, h.Counters)
	}
	if loggedAt(h, LogInfo, "decides again") {
		t.Fatalf("a read ended the spell: %q", h.logs)
	}
	if err := srv.Unfill(); err != nil {
		t.Fatal(err)
	}
	if o := h.send("x-user=a"); o.headers["ratelimit"] == "" || gauge(h, "ratelimit.redis.healthy") != 1 {
		t.Fatalf("once memory is freed: %+v, ratelimit.redis.healthy %d", o, gauge(h, "ratelimit.redis.healthy"))
	}
}

// A tick after which a decision's call was answered sends no read while
// nothing is cached: under load the probe costs nothing per request. The
// next tick without a decision reads.
func TestProbeSkippedAfterADecision(t *testing.T) {
	h := newFakeHost(t, healthConfig("allow", ""))
	h.Clock = time.Now()
	h.tickPumped()
	for i := range 3 {
		h.send("x-user=a")
		h.Clock = h.Clock.Add(time.Second)
		h.tickPumped()
		if n := h.Counters["ratelimit.epoch.polls"]; n != 1 {
			t.Fatalf("tick %d after a decision: %d reads; want only the first tick's", i, n)
		}
	}
	h.Clock = h.Clock.Add(time.Second)
	h.tickPumped()
	if n := h.Counters["ratelimit.epoch.polls"]; n != 2 {
		t.Fatalf("a tick with no decision since the last: %d reads; want 2", n)
	}
}

// The probe is an FCALL of the library's epoch function: with Redis up
// and the library not loaded, a VM with no traffic says so, at critical
// level, and adds 0.
func TestProbeFindsTheLibraryMissing(t *testing.T) {
	h := newFakeHost(t, healthConfig("allow", ""))
	h.Clock = time.Now()
	if _, err := server.Do("FUNCTION", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // no filter test runs in parallel
		if err := redistest.LoadLibrary(server.Client); err != nil {
			t.Fatal(err)
		}
	})
	h.tickPumped()
	if g := gauge(h, "ratelimit.redis.healthy"); g != 0 || h.Counters["ratelimit.redis.library_missing"] != 1 ||
		h.Counters["ratelimit.epoch.failed"] != 1 || !loggedAt(h, LogCritical, "is not loaded on Redis") {
		t.Fatalf("the library missing, no traffic: ratelimit.redis.healthy %d, counters %v, logs %q", g, h.Counters, h.logs)
	}
}
