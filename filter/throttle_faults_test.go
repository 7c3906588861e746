package filter

import (
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
)

// Each test here is a review's finding, failing before its fix, or a way
// a held stream could be left behind that the review checked.

// refusingTicker is a host that refuses every tick period.
type refusingTicker struct{ *fakeHost }

func (refusingTicker) SetTickPeriod(time.Duration) bool { return false }

// A host that refuses every tick period holds nothing: the rule denies.
// One that refuses only the fast tick holds the first request (it goes on
// at the next slow tick, late, never early) and nothing after it.
func TestThrottleTickRefused(t *testing.T) {
	h := newFakeHost(t, throttled)
	h.plugin = NewPlugin(h.plugin.cfg, refusingTicker{h})
	h.Clock = time.Unix(1_700_000_000, 0)
	if a := h.open("x-user=dee"); !a.admitted() {
		t.Fatal("first request denied")
	}
	if b := h.open("x-user=dee"); b.fs.Status != 429 || h.plugin.Delayed() != 0 {
		t.Fatalf("no tick at all: status %d, held %d", b.fs.Status, h.plugin.Delayed())
	}

	h2 := newFakeHost(t, throttled)
	slowOnly := &slowOnlyTicker{fakeHost: h2}
	h2.plugin = NewPlugin(h2.plugin.cfg, slowOnly)
	h2.Clock = time.Unix(1_700_000_000, 0)
	h2.open("x-user=eve")
	if b := h2.open("x-user=eve"); b.fs.Status != 0 || h2.plugin.Delayed() != 1 {
		t.Fatalf("first hold: status %d, held %d", b.fs.Status, h2.plugin.Delayed())
	}
	if c := h2.open("x-user=eve"); c.fs.Status != 429 || h2.plugin.Delayed() != 1 {
		t.Fatalf("after the fast tick was refused: status %d, held %d", c.fs.Status, h2.plugin.Delayed())
	}
}

// slowOnlyTicker accepts the slow tick only.
type slowOnlyTicker struct{ *fakeHost }

func (slowOnlyTicker) SetTickPeriod(d time.Duration) bool { return d == slowTick }

// A plain funnel of another rule on a held request is charged as of the
// request's release: a request admitted at once right after it, on the
// same key, finds the funnel full (found by a review: both went on in the
// same tick).
func TestThrottleChargesOtherFunnelsAsOfRelease(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[
	{"name":"user","key":[{"source":"header","name":"x-user"}],
	 "limits":[{"algorithm":"funnel","capacity":1,"rate":2,"period":"1s"}],"throttle":{"max_delay":"1s"}},
	{"name":"team","key":[{"source":"header","name":"x-team"}],
	 "limits":[{"algorithm":"funnel","capacity":1,"rate":5,"period":"2s"}]}]}`)
	h.open("x-user=ann", "x-team=x")
	r2 := h.open("x-user=ann", "x-team=y") // held about 500ms for user ann
	// Charged as of its arrival, team y (one per 400ms) would admit r3
	// at r2's release; charged as of then, not for another 400ms.
	if r2.st.delayedAt() == 0 {
		t.Fatal("r2 not held")
	}
	time.Sleep(time.Until(r2.st.releaseAt()))
	h.plugin.OnTick()
	r3 := h.open("x-user=bob", "x-team=y") // team y: r2 counts from its release
	if r2.fs.Resumed != 1 || r3.fs.Status != 429 {
		t.Fatalf("r2 resumed %d; r3 status %d, held %d", r2.fs.Resumed, r3.fs.Status, r3.st.delayedAt())
	}
}

// A concurrency slot taken by a held request is freed when its client
// leaves before its release.
func TestThrottleHeldStreamEndingFreesItsSlot(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[
	{"name":"user","key":[{"source":"header","name":"x-user"}],
	 "limits":[{"algorithm":"funnel","capacity":1,"rate":1,"period":"1s"}],"throttle":{"max_delay":"2s"}},
	{"name":"slots","key":[{"source":"header","name":"x-user"}],
	 "limits":[{"algorithm":"concurrency","limit":5,"max_duration":"5m"}]}]}`)
	a, b := h.open("x-user=ann"), h.open("x-user=ann")
	if !a.admitted() || b.st.delayedAt() == 0 || h.inFlight("{slots|ann}:0") != 2 {
		t.Fatalf("held %d, slots %d", b.st.delayedAt(), h.inFlight("{slots|ann}:0"))
	}
	b.end()
	if n := h.inFlight("{slots|ann}:0"); n != 1 || h.plugin.Delayed() != 0 || b.fs.Resumed != 0 || h.Counters["ratelimit.throttle.held"] != 0 {
		t.Fatalf("after the held client left: slots %d, held %d, resumed %d, metrics %v", n, h.plugin.Delayed(), b.fs.Resumed, h.Counters)
	}
}

// A _rules_ entry's throttle: the stream's Plugin is the entry's, and the
// top-level Plugin holds and releases it.
func TestThrottleInAMatchRulesEntry(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"_rules_":[{"_match_route_":["r1"],"redis":{"cluster":"redis"},
	"rules":[{"name":"user","key":[{"source":"header","name":"x-user"}],
	 "limits":[{"algorithm":"funnel","capacity":1,"rate":1,"period":"1s"}],"throttle":{"max_delay":"2s"}}]}],
	"rules":[{"name":"other","key":[{"source":"header","name":"x-other"}],"limits":[{"algorithm":"funnel","capacity":5,"rate":5,"period":"1s"}]}]}`)
	h.props = map[string]string{"route_name": "r1"}
	h.Clock = time.Unix(1_700_000_000, 0)
	a, b := h.open("x-user=ann"), h.open("x-user=ann")
	if !a.admitted() || b.st.delayedAt() == 0 || h.plugin.Delayed() != 1 || b.st.pol == b.st.vm.top() {
		t.Fatalf("held %d, plugin held %d", b.st.delayedAt(), h.plugin.Delayed())
	}
	h.Clock = b.st.releaseAt()
	h.plugin.OnTick()
	if b.fs.Resumed != 1 || h.plugin.Delayed() != 0 {
		t.Fatalf("resumed %d held %d", b.fs.Resumed, h.plugin.Delayed())
	}
}

// Calls in flight when the host refuses the fast tick: the refusal is
// logged once, not again for each held reply (found by a review).
func TestThrottleRefusedTickLoggedOnce(t *testing.T) {
	h := newFakeHost(t, throttled)
	h.plugin = NewPlugin(h.plugin.cfg, &slowOnlyTicker{fakeHost: h})
	h.Clock = time.Unix(1_700_000_000, 0)
	h.open("x-user=eve")
	pairs := [][2]string{{":method", "GET"}, {":path", "/"}, {":authority", "example.com"}, {"x-user", "eve"}}
	for range 2 { // both calls out before either reply
		h.plugin.NewStream(filtertest.NewStream("192.0.2.7:40000", nil)).OnRequestHeaders(pairs)
	}
	h.Pump()
	if n := strings.Count(strings.Join(h.logs, "\n"), "refused a 10ms tick"); n != 1 || h.plugin.Delayed() != 2 {
		t.Fatalf("logged %d times, %d held: %q", n, h.plugin.Delayed(), h.logs)
	}
}
