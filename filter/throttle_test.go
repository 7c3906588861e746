package filter

import (
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// throttled is a funnel of one request a second on x-user, whose throttle
// holds a request up to 2.5s.
const throttled = `{"redis":{"cluster":"redis"},"headers":"both","rules":[{"name":"calm",
	"key":[{"source":"header","name":"x-user"}],
	"limits":[{"algorithm":"funnel","capacity":1,"rate":1,"period":"1s"}],
	"throttle":{"max_delay":"2.5s"}}]}`

// A request the funnel denies now is held until it conforms: the second
// about a second, the third about two, each let through at the first tick
// at or after its time and not before; the fourth, which would wait three
// seconds, is denied and takes nothing. While any is held the tick is
// fast; a held stream whose client leaves is dropped, never resumed.
func TestThrottleHoldsUntilTheFunnelAdmits(t *testing.T) {
	h := newFakeHost(t, throttled)
	t0 := time.Unix(1_700_000_000, 0)
	h.Clock = t0
	a := h.open("x-user=ann")
	if !a.admitted() || a.fs.Resumed != 1 || h.plugin.Delayed() != 0 {
		t.Fatalf("first request: resumed %d, status %d, held %d", a.fs.Resumed, a.fs.Status, h.plugin.Delayed())
	}
	b, c := h.open("x-user=ann"), h.open("x-user=ann")
	for i, o := range []*openStream{b, c} {
		wait := o.st.releaseAt().Sub(t0)
		if o.fs.Resumed != 0 || o.fs.Status != 0 || o.st.HoldUntilAdmitted() != Pause || wait <= time.Duration(i)*time.Second+500*time.Millisecond || wait > time.Duration(i+1)*time.Second {
			t.Fatalf("request %d: resumed %d, status %d, waits %v", i+2, o.fs.Resumed, o.fs.Status, wait)
		}
	}
	if h.plugin.Delayed() != 2 || h.TickPeriod != config.ThrottleTick || h.Counters["ratelimit.throttle.delayed"] != 2 {
		t.Fatalf("held %d, tick %v, metrics %v", h.plugin.Delayed(), h.TickPeriod, h.Counters)
	}
	calls := h.Calls
	d := h.open("x-user=ann")
	if d.fs.Status != 429 || d.fs.Headers["retry-after"] == "" || h.plugin.Delayed() != 2 {
		t.Fatalf("fourth request: status %d, headers %v, held %d", d.fs.Status, d.fs.Headers, h.plugin.Delayed())
	}
	// Its denial is cached until max_delay before its Retry-After: until
	// then any request would wait longer than max_delay.
	retry := h.plugin.top().denyCache.entries[h.plugin.cfg.Redis.Prefix+"{calm|ann}"].until.Sub(t0)
	if e := h.open("x-user=ann"); e.fs.Status != 429 || h.Calls != calls+1 || retry <= 0 || retry > 500*time.Millisecond {
		t.Fatalf("fifth request: status %d, %d calls, cached for %v", e.fs.Status, h.Calls-calls, retry)
	}

	h.Clock = b.st.releaseAt().Add(-time.Nanosecond)
	h.plugin.OnTick()
	if b.fs.Resumed != 0 {
		t.Fatal("released before its time")
	}
	h.Clock = b.st.releaseAt()
	h.plugin.OnTick()
	if b.fs.Resumed != 1 || c.fs.Resumed != 0 || b.st.HoldUntilAdmitted() != Continue || h.TickPeriod != config.ThrottleTick {
		t.Fatalf("at its time: resumed %d and %d, tick %v", b.fs.Resumed, c.fs.Resumed, h.TickPeriod)
	}
	c.end() // the client leaves while held
	h.Clock = h.Clock.Add(5 * time.Second)
	h.plugin.OnTick()
	if c.fs.Resumed != 0 || h.plugin.Delayed() != 0 || h.TickPeriod != slowTick || h.Counters["ratelimit.throttle.held"] != 0 {
		t.Fatalf("after the client left: resumed %d, held %d, tick %v, metrics %v", c.fs.Resumed, h.plugin.Delayed(), h.TickPeriod, h.Counters)
	}
	a.respond()
	b.respond()
	if h.plugin.LiveStreams() != 2 { // d and e stay open
		t.Fatalf("%d live streams", h.plugin.LiveStreams())
	}
}

// While the tick is fast for held requests, the periodic work (sweeps,
// overdue calls) still runs once a second, not on every tick.
func TestThrottleFastTickKeepsPeriodicWorkSlow(t *testing.T) {
	h := newFakeHost(t, throttled)
	t0 := time.Unix(1_700_000_000, 0)
	h.Clock = t0
	h.open("x-user=bob")
	h.open("x-user=bob") // held: the tick is fast
	h.plugin.OnTick()
	runs := 0
	for i := 1; i <= 100; i++ {
		h.Clock = t0.Add(time.Duration(i) * config.ThrottleTick)
		before := h.plugin.lastWork
		h.plugin.OnTick()
		if h.plugin.lastWork != before {
			runs++
		}
	}
	if runs != 1 {
		t.Fatalf("periodic work ran %d times in one second of fast ticks", runs)
	}
}

// A host that cannot change the tick holds nothing: the throttled rule
// denies as if it had none, and says so once at start.
func TestThrottleNeedsATicker(t *testing.T) {
	h := newFakeHost(t, throttled)
	h.plugin = NewPlugin(h.plugin.cfg, struct{ PluginHost }{h})
	h.Clock = time.Unix(1_700_000_000, 0)
	if a := h.open("x-user=cy"); !a.admitted() {
		t.Fatal("first request denied")
	}
	if b := h.open("x-user=cy"); b.fs.Status != 429 || h.plugin.Delayed() != 0 {
		t.Fatalf("second request: status %d, held %d", b.fs.Status, h.plugin.Delayed())
	}
	if len(h.logs) == 0 || !strings.Contains(strings.Join(h.logs, "\n"), "cannot change the tick period") {
		t.Fatalf("logs %q", h.logs)
	}
}
