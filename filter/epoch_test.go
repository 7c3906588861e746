package filter

import (
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
)

// A denial cached until its Retry-After (an hour here) is dropped once an
// operator's change bumps the epoch: on the next tick's read, and only
// then. Each tick reads the epoch, cached or not: it is the VM's probe.
func TestEpochClearsDenyCache(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"header","name":"x-key"}],
		"limits":[{"algorithm":"funnel","capacity":1,"rate":1,"period":"1h"}]}]}`)
	p := h.plugin.cfg.Redis.Prefix
	tick := func() {
		h.plugin.OnTick()
		h.Pump()
	}
	tick() // the first read learns the epoch
	if h.Counters["ratelimit.epoch.polls"] != 1 || h.Counters["ratelimit.epoch.changes"] != 1 {
		t.Fatalf("the first tick, nothing cached: %v; want one read", h.Counters)
	}
	if o := h.send("x-key=a"); o.status != 200 {
		t.Fatalf("first: %+v", o)
	}
	if o := h.send("x-key=a"); o.status != 429 {
		t.Fatalf("second: %+v", o)
	}
	calls := h.Calls
	tick()
	if o := h.send("x-key=a"); o.status != 429 || h.Calls != calls+1 {
		t.Fatalf("the unchanged epoch keeps the cache: %+v, %d calls", o, h.Calls-calls)
	}
	// The operator resets the key and bumps the epoch.
	if _, err := server.Do("DEL", p+"{r|a}:0"); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Do("INCR", keyspace.EpochKey(p)); err != nil {
		t.Fatal(err)
	}
	if o := h.send("x-key=a"); o.status != 429 {
		t.Fatalf("before the tick the cache still answers: %+v", o)
	}
	tick()
	if o := h.send("x-key=a"); o.status != 200 {
		t.Fatalf("after the tick, Redis decides again: %+v", o)
	}
	if got := h.Counters["ratelimit.epoch.changes"]; got != 2 {
		t.Fatalf("epoch changes %d, want 2: %v", got, h.Counters)
	}
	if polls := h.Counters["ratelimit.epoch.polls"]; polls != 3 {
		t.Fatalf("one read per tick: %d", polls)
	}
}

// Denials past their Retry-After are swept on the tick; the epoch is read
// on every tick all the same, one read each.
func TestDenyCacheSweptOnTick(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"r",
	"key":[{"source":"header","name":"x-user"}],"limits":[{"algorithm":"sliding_log","limit":1,"window":"1s"}]}]}`)
	h.Clock = time.Unix(1_700_000_000, 0)
	h.send("x-user=a")
	if o := h.send("x-user=a"); o.status != 429 || h.plugin.top().denyCache.size() != 1 {
		t.Fatalf("second request: %+v, cache %d", o, h.plugin.top().denyCache.size())
	}
	h.plugin.OnTick()
	h.Pump()
	polls := h.Counters["ratelimit.epoch.polls"]
	h.Clock = h.Clock.Add(2 * time.Second) // past the Retry-After
	h.plugin.OnTick()
	h.Pump()
	h.plugin.OnTick()
	h.Pump()
	if h.plugin.top().denyCache.size() != 0 || polls != 1 || h.Counters["ratelimit.epoch.polls"] != 3 {
		t.Fatalf("cache %d, epoch polls %d then %d", h.plugin.top().denyCache.size(), polls, h.Counters["ratelimit.epoch.polls"])
	}
}

// After a failed read the VM cannot know what changed meanwhile: a
// failover may have lost the last bump (asynchronous replication) and an
// operator's next bump brought the epoch back to the value the VM saw. The
// first read answered after a failure clears the caches, whatever it reads.
func TestEpochReadAfterFailureClears(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"header","name":"x-key"}],
		"limits":[{"algorithm":"funnel","capacity":1,"rate":1,"period":"1h"}]}]}`)
	p := h.plugin.cfg.Redis.Prefix
	epoch := keyspace.EpochKey(p)
	tick := func() {
		h.plugin.OnTick()
		h.Pump()
	}
	if _, err := server.Do("SET", epoch, "7"); err != nil {
		t.Fatal(err)
	}
	tick() // reads 7
	if o := h.send("x-key=b"); o.status != 200 {
		t.Fatalf("first: %+v", o)
	}
	if o := h.send("x-key=b"); o.status != 429 {
		t.Fatalf("second: %+v", o)
	}
	h.Down = true
	tick()
	if h.Counters["ratelimit.epoch.failed"] != 1 {
		t.Fatalf("the read did not fail: %v", h.Counters)
	}
	h.Down = false
	// The promoted replica had 6; the operator resets the key and bumps: 7.
	for _, cmd := range [][]any{{"SET", epoch, "6"}, {"DEL", p + "{r|b}:0"}, {"INCR", epoch}} {
		if _, err := server.Do(cmd...); err != nil {
			t.Fatal(err)
		}
	}
	tick()
	if o := h.send("x-key=b"); o.status != 200 {
		t.Fatalf("the deny cache outlived a failed read: %+v, %v", o, h.Counters)
	}
}
