package filter

import (
	"strconv"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// leased is a sliding log of limit per hour on x-user, leased in batches
// of at most batch for an hour, hot from 2 requests a second.
func leased(limit, batch int) string {
	return `{"redis":{"cluster":"redis"},"headers":"both","rules":[{"name":"hot",
	"key":[{"source":"header","name":"x-user"}],
	"limits":[{"algorithm":"sliding_log","limit":` + strconv.Itoa(limit) + `,"window":"1h"}],
	"lease":{"max_hold":"1h","max_batch":` + strconv.Itoa(batch) + `,"hot_rate":2}}]}`
}

// logCount is the units a sliding log key holds in Redis: its entries,
// or once one weighs more than 1, the total its member "s" keeps.
func (h *fakeHost) logCount(key string) int64 {
	h.t.Helper()
	return logCountOn(h.t, server.Client, h.plugin.cfg.Redis.Prefix+key)
}

// logCountOn is logCount of the whole key on the Redis c talks to.
func logCountOn(t *testing.T, c *redistest.Client, key string) int64 {
	t.Helper()
	s, err := c.Do("ZSCORE", key, "s")
	if err != nil {
		t.Fatal(err)
	}
	if s != nil {
		n, err := strconv.ParseFloat(s.(string), 64)
		if err != nil {
			t.Fatal(err)
		}
		return -int64(n)
	}
	n, err := c.Int("ZCARD", key)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A hot key takes batches: after the first request (cold, one call), the
// next asks for what its rate spends in max_hold, up to max_batch, and the
// requests after it are admitted with no call until the batch runs out.
// Redis holds exactly what was admitted plus what the VM holds, and once
// the lease ends, exactly what was admitted.
func TestLeaseSpendsBatchesWithoutCalls(t *testing.T) {
	h := newFakeHost(t, leased(1000, 10))
	h.Clock = time.Unix(1_700_000_000, 0)
	for i := range 25 {
		if o := h.send("x-user=ann"); o.status != 200 {
			t.Fatalf("request %d: %+v", i, o)
		}
	}
	// One cold call; then the key is hot, its rate 2 a second spends far
	// more than max_batch in max_hold: batches of 10 for the other 24.
	if calls := uint64(h.Calls) - h.Counters["ratelimit.redis.noscript"]; calls != 4 || h.Counters["ratelimit.lease.local"] != 21 || h.Counters["ratelimit.lease.grants"] != 3 {
		t.Fatalf("%d calls for 25 requests; metrics %v", calls, h.Counters)
	}
	held := h.plugin.top().leases[0].entries[h.plugin.cfg.Redis.Prefix+"{hot|ann}"].units
	if got := h.logCount("{hot|ann}:0"); got != 25+held {
		t.Fatalf("Redis holds %d units; 25 admitted and %d held", got, held)
	}
	h.Clock = h.Clock.Add(time.Hour) // max_hold is over
	h.plugin.OnTick()
	h.Pump()
	if got := h.logCount("{hot|ann}:0"); held != 6 || got != 25 || h.Counters["ratelimit.lease.returned"] != 6 {
		t.Fatalf("after the lease ended Redis holds %d units, want 25 (%d held, %d returned)", got, held, h.Counters["ratelimit.lease.returned"])
	}
}

// Near its limit a lease takes only what is left, so the limit is exact:
// 10 of 12 admitted. Then Redis denies: the key is held until the
// Retry-After, with no call, and from then asks for a whole batch.
func TestLeaseNearLimitAndOverloaded(t *testing.T) {
	h := newFakeHost(t, leased(10, 4))
	h.Clock = time.Unix(1_700_000_000, 0)
	admitted := 0
	for range 12 {
		if h.send("x-user=bob").status == 200 {
			admitted++
		}
	}
	e := h.plugin.top().leases[0].entries[h.plugin.cfg.Redis.Prefix+"{hot|bob}"]
	if admitted != 10 || h.logCount("{hot|bob}:0") != 10 || !e.overloaded || e.holdUntil.IsZero() {
		t.Fatalf("admitted %d, Redis holds %d, entry %+v", admitted, h.logCount("{hot|bob}:0"), e)
	}
	before := h.Calls
	o := h.send("x-user=bob")
	if o.status != 429 || h.Calls != before || o.headers["retry-after"] != "3600" {
		t.Fatalf("held key: %+v, %d calls", o, h.Calls-before)
	}
	if least, most := e.t.batch(e, 1); least != most || most < 2 {
		t.Fatalf("an overloaded key asks for %d to %d", least, most)
	}
}

// A request denied by another rule gives back what it spent from a lease.
func TestLeaseSpendGivenBackOnDenial(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"hot",
	"key":[{"source":"header","name":"x-user"}],
	"limits":[{"algorithm":"sliding_log","limit":100,"window":"1h"}],
	"lease":{"max_hold":"1h","max_batch":5,"hot_rate":1}},
	{"name":"strict","match":{"path":"/strict"},"key":[{"source":"header","name":"x-user"}],
	"limits":[{"algorithm":"sliding_log","limit":1,"window":"1h"}]}]}`)
	h.Clock = time.Unix(1_700_000_000, 0)
	h.send("x-user=cy") // hot at once: a batch of 5, one spent
	e := h.plugin.top().leases[0].entries[h.plugin.cfg.Redis.Prefix+"{hot|cy}"]
	if e.units != 4 {
		t.Fatalf("lease holds %d", e.units)
	}
	if o := h.send("x-user=cy", ":path=/strict"); o.status != 200 || e.units != 3 {
		t.Fatalf("first strict request: %+v, lease %d", o, e.units)
	}
	if o := h.send("x-user=cy", ":path=/strict"); o.status != 429 || e.units != 3 {
		t.Fatalf("denied strict request: %+v, lease %d, want 3", o, e.units)
	}
	if got := h.logCount("{hot|cy}:0"); got != 5 {
		t.Fatalf("Redis holds %d units of the batch of 5", got)
	}
}

// An operator's change (the epoch moves) ends every lease and hold: the
// units go back, and the next request asks Redis.
func TestLeaseEndsWhenEpochMoves(t *testing.T) {
	h := newFakeHost(t, leased(1000, 10))
	h.Clock = time.Unix(1_700_000_000, 0)
	for range 5 {
		h.send("x-user=dee")
	}
	h.plugin.OnTick() // the first read of the epoch
	h.Pump()
	h.send("x-user=dee")
	h.send("x-user=dee")
	if _, err := server.Do("INCR", keyspace.EpochKey(h.plugin.cfg.Redis.Prefix)); err != nil {
		t.Fatal(err)
	}
	h.plugin.OnTick()
	h.Pump()
	e := h.plugin.top().leases[0].entries[h.plugin.cfg.Redis.Prefix+"{hot|dee}"]
	if got := h.logCount("{hot|dee}:0"); got != 7 || e.granted != 0 {
		t.Fatalf("after the epoch moved Redis holds %d units for 7 admitted; lease %+v", got, e)
	}
}

// Keys below hot_rate take one call per request; a key that passes it in
// a tick is leased. A full table gives the oldest key's lease back.
func TestLeaseHotKeysOnly(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"hot",
	"key":[{"source":"header","name":"x-user"}],
	"limits":[{"algorithm":"sliding_log","limit":1000,"window":"1h"}],
	"lease":{"max_hold":"1h","max_batch":10,"hot_rate":5,"max_keys":1}}]}`)
	h.Clock = time.Unix(1_700_000_000, 0)
	calls := func() uint64 { return uint64(h.Calls) - h.Counters["ratelimit.redis.noscript"] }
	for tick := range 3 {
		for range 4 {
			h.send("x-user=cold")
		}
		h.plugin.OnTick() // a new tick: the sketch starts again
		h.Pump()
		if got := calls(); got != uint64(4*(tick+1)) {
			t.Fatalf("tick %d: %d calls for %d requests of a cold key", tick, got, 4*(tick+1))
		}
	}
	before := calls()
	for range 20 {
		h.send("x-user=hot")
	}
	// Four plain calls, then the key is hot: batches of 10 for 16.
	if got := calls() - before; got != 4+2 || h.Counters["ratelimit.lease.hot_keys"] != 1 {
		t.Fatalf("%d calls for 20 requests of a hot key; %v", got, h.Counters)
	}
	held := h.plugin.top().leases[0].entries[h.plugin.cfg.Redis.Prefix+"{hot|hot}"].units
	for range 5 {
		h.send("x-user=hot2") // hot too: the table holds one key, so hot's lease goes back
	}
	h.Pump()
	if got := h.logCount("{hot|hot}:0"); held == 0 || got != 20 || h.Counters["ratelimit.lease.hot_keys"] != 2 {
		t.Fatalf("evicted key: Redis holds %d units for 20 admitted (%d were held); %v", got, held, h.Counters)
	}
}
