package filter

import (
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
)

// A rule asks for a batch, then a later rule of the same request rejects
// it before its calls go out (here a missing key): the entry is not left
// waiting for a reply that never comes, and the key is leased again.
func TestLeaseAskOfARequestRejectedEarly(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[
	{"name":"global","key":[{"source":"constant","value":"all"}],
	 "limits":[{"algorithm":"sliding_log","limit":1000,"window":"1h"}],
	 "lease":{"max_hold":"1s","max_batch":10,"hot_rate":1}},
	{"name":"user","key":[{"source":"header","name":"x-user"}],"on_missing_key":"deny",
	 "limits":[{"algorithm":"sliding_log","limit":1000,"window":"1h"}]}]}`)
	h.Clock = time.Unix(1_700_000_000, 0)
	if o := h.send(); o.status == 200 { // no x-user: denied by rule 1 after rule 0 asked
		t.Fatalf("want a denial: %+v", o)
	}
	e := h.plugin.top().leases[0].entries[h.plugin.cfg.Redis.Prefix+"{global|all}"]
	for tick := 0; tick < 5; tick++ {
		for range 5 {
			h.send("x-user=a")
		}
		h.Clock = h.Clock.Add(time.Second)
		h.plugin.OnTick()
		h.Pump()
	}
	if e.pending || h.Counters["ratelimit.lease.grants"] == 0 {
		t.Fatalf("entry pending forever: pending=%v grants=%d local=%d calls=%d", e.pending,
			h.Counters["ratelimit.lease.grants"], h.Counters["ratelimit.lease.local"], h.Calls)
	}
}

// Under failure_mode: local, a key leased while Redis was up is limited
// by the VM once Redis is down: a recycled call's earlier grant does not
// pass for the local decision.
func TestLeaseLocalFallbackAfterAGrant(t *testing.T) {
	h := newFakeHost(t, localConfig("1", "", `[{"name":"hot","key":[{"source":"header","name":"x-user"}],
	 "limits":[{"algorithm":"sliding_log","limit":4,"window":"1h"}],
	 "lease":{"max_hold":"1s","max_batch":2,"hot_rate":1}}]`))
	h.Clock = time.Unix(1_700_000_000, 0)
	if o := h.send("x-user=a"); o.status != 200 || h.Counters["ratelimit.lease.grants"] != 1 {
		t.Fatalf("first: %+v %v", o, h.Counters)
	}
	h.Clock = h.Clock.Add(2 * time.Second) // the lease ends
	h.plugin.OnTick()
	h.Pump()
	h.Down = true
	admitted := 0
	for range 20 {
		if h.send("x-user=a").status == 200 {
			admitted++
		}
	}
	// Local share 1 of a limit of 4 per hour: at most 4 admitted locally.
	if admitted > 4 {
		t.Fatalf("Redis down, failure_mode local, limit 4/h: %d of 20 admitted (local_denied %d)", admitted,
			h.Counters["ratelimit.failure_mode.local_denied"])
	}
}

// Under failure_mode: local, a request costing more than the VM's share
// is refused; its batch call's entry is not left waiting.
func TestLeaseAskOfALocalOverCapacity(t *testing.T) {
	h := newFakeHost(t, localConfig("0.25", "", `[{"name":"hot","key":[{"source":"header","name":"x-user"}],
	 "cost":{"header":"x-cost","default":1},
	 "limits":[{"algorithm":"sliding_log","limit":100,"window":"1h"}],
	 "lease":{"max_hold":"1s","max_batch":10,"hot_rate":1}}]`))
	h.Clock = time.Unix(1_700_000_000, 0)
	h.Down = true
	if o := h.send("x-user=a", "x-cost=50"); o.status == 200 {
		t.Fatalf("want cost_exceeds_capacity: %+v", o)
	}
	h.Down = false
	e := h.plugin.top().leases[0].entries[h.plugin.cfg.Redis.Prefix+"{hot|a}"]
	if e == nil || e.pending {
		t.Fatalf("entry pending forever after a local over-capacity denial: %+v", e)
	}
}

// Cluster mode: a leased rule is granted while another rule's call
// denies, and the key's tier changed while the call was out: the whole
// batch goes back, found in the sliding log by the weight Redis recorded.
func TestLeaseGrantForAnOldTierGoesBack(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"hot",
	"key":[{"source":"header","name":"x-user"}],
	"tiers":{"from":{"header":"x-plan"},"default":"free","limits":{
	  "free":[{"algorithm":"sliding_log","limit":1000,"window":"1h"}],
	  "pro":[{"algorithm":"sliding_log","limit":2000,"window":"1h"}]}},
	"lease":{"max_hold":"1h","max_batch":10,"hot_rate":1}}]}`)
	h.Clock = time.Unix(1_700_000_000, 0)
	h.send("x-user=warm") // loads the script
	// Request 1 (free) asks for a batch; its stream ends before the reply.
	fs := filtertest.NewStream("192.0.2.7:40000", nil)
	s := h.plugin.NewStream(fs)
	s.OnRequestHeaders([][2]string{{":method", "GET"}, {":path", "/"}, {":authority", "e"}, {"x-user", "a"}})
	s.OnDone() // detached
	// Request 2 (pro) changes the entry's tier while the call is out: plain call.
	s2 := h.plugin.NewStream(filtertest.NewStream("192.0.2.7:40000", nil))
	s2.OnRequestHeaders([][2]string{{":method", "GET"}, {":path", "/"}, {":authority", "e"}, {"x-user", "a"}, {"x-plan", "pro"}})
	h.Pump()
	s2.OnDone()
	h.Pump()
	// Redis should hold just request 2's unit: request 1 took nothing.
	if got := h.logCount("{hot|a}:0"); got != 1 {
		t.Fatalf("Redis holds %d units, want 1 (returned metric says %d)", got, h.Counters["ratelimit.lease.returned"])
	}
}

// Beside TestLeaseLocalFallbackAfterAGrant: the same without a prior grant: the local limiter denies.
func TestLeaseLocalFallbackWithoutAGrant(t *testing.T) {
	h := newFakeHost(t, localConfig("1", "", `[{"name":"hot","key":[{"source":"header","name":"x-user"}],
	 "limits":[{"algorithm":"sliding_log","limit":4,"window":"1h"}],
	 "lease":{"max_hold":"1s","max_batch":2,"hot_rate":1}}]`))
	h.Clock = time.Unix(1_700_000_000, 0)
	h.Down = true
	admitted := 0
	for range 20 {
		if h.send("x-user=a").status == 200 {
			admitted++
		}
	}
	if admitted != 4 {
		t.Fatalf("control: %d admitted", admitted)
	}
}

// A spend whose lease ends (max_hold, epoch, tier change, eviction) while
// the request's other call is out goes back to Redis when that call
// denies: Redis does not keep a denied request's unit.
func TestLeaseSpendGivenBackAfterLeaseEnded(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis","timeout":"5s"},"rules":[{"name":"hot",
	"key":[{"source":"header","name":"x-user"}],
	"limits":[{"algorithm":"sliding_log","limit":100,"window":"1h"}],
	"lease":{"max_hold":"1s","max_batch":5,"hot_rate":1}},
	{"name":"strict","match":{"path":"/strict"},"key":[{"source":"header","name":"x-user"}],
	"limits":[{"algorithm":"sliding_log","limit":1,"window":"1h"}]}]}`)
	h.Clock = time.Unix(1_700_000_000, 0)
	h.send("x-user=cy")                  // a batch, one spent
	h.send("x-user=cy", ":path=/strict") // spent, strict admitted
	fs := filtertest.NewStream("192.0.2.7:40000", nil)
	s := h.plugin.NewStream(fs)
	s.OnRequestHeaders([][2]string{{":method", "GET"}, {":path", "/strict"}, {":authority", "e"}, {"x-user", "cy"}})
	h.Clock = h.Clock.Add(2 * time.Second)
	h.plugin.OnTick() // the lease ends while strict's call is out
	h.Pump()
	s.OnDone()
	h.Pump()
	if fs.Status != 429 {
		t.Fatalf("want strict to deny: %d", fs.Status)
	}
	if got := h.logCount("{hot|cy}:0"); got != 2 {
		t.Fatalf("Redis holds %d units of hot for 2 admitted requests", got)
	}
}

// A leased rule's call replies (a grant) while the request's other call
// is still out, and the stream ends: with cluster_mode (one call per rule)
// or beside a shadow rule (its own call). The grant is the lease's, whole:
// not left charged in Redis and held by nobody.
func TestLeaseStreamEndsBetweenReplies(t *testing.T) {
	for name, other := range map[string]string{
		"cluster_mode": `"cluster_mode":true},"rules":[` + leaseHotRule + `,{"name":"other",`,
		"shadow":       `"timeout":"200ms"},"rules":[` + leaseHotRule + `,{"name":"other","shadow":true,`,
	} {
		t.Run(name, func(t *testing.T) {
			h := newFakeHost(t, `{"redis":{"cluster":"redis",`+other+`"key":[{"source":"header","name":"x-user"}],
			"limits":[{"algorithm":"sliding_log","limit":100,"window":"1h"}]}]}`)
			h.Clock = time.Unix(1_700_000_000, 0)
			h.send("x-user=warm") // loads the script: no NOSCRIPT below
			s := h.plugin.NewStream(filtertest.NewStream("192.0.2.7:40000", nil))
			s.OnRequestHeaders([][2]string{{":method", "GET"}, {":path", "/"}, {":authority", "e"}, {"x-user", "a"}})
			if len(h.Queue) != 2 {
				t.Fatalf("%d calls queued", len(h.Queue))
			}
			// Deliver only the leased rule's call (the first), then the client goes.
			q := append([]filtertest.Call(nil), h.Queue...)
			h.Queue = append([]filtertest.Call(nil), q[0])
			h.Pump()
			s.OnDone()
			h.Queue = append(h.Queue, q[1])
			h.Pump()
			e := h.plugin.top().leases[0].entries[h.plugin.cfg.Redis.Prefix+"{hot|a}"]
			if e.pending || h.logCount("{hot|a}:0") != e.units || e.units != 5 {
				t.Fatalf("pending=%v; Redis holds %d units of hot, the VM %d", e.pending, h.logCount("{hot|a}:0"), e.units)
			}
		})
	}
}

// leaseHotRule is a sliding log of 100 an hour on x-user, every key hot,
// leased in batches of 5 held up to an hour.
const leaseHotRule = `{"name":"hot","key":[{"source":"header","name":"x-user"}],
	"limits":[{"algorithm":"sliding_log","limit":100,"window":"1h"}],
	"lease":{"max_hold":"1h","max_batch":5,"hot_rate":1}}`
