package algorithms

import (
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

const minute = int64(60_000_000) // µs

// wantSettled fails unless a one-settle Settlement is {applied, remaining}.
func wantSettled(t *testing.T, what string, got Settlement, applied, remaining int64) {
	t.Helper()
	if len(got.Results) != 1 || got.Results[0] != (Settled{Applied: applied, Remaining: remaining}) {
		t.Fatalf("%s: %+v, want applied %d, remaining %d", what, got, applied, remaining)
	}
}

// wantResult fails unless d's one result is r, durations given in µs.
func wantResult(t *testing.T, what string, d Decision, allowed bool, remaining, retry, reset int64) {
	t.Helper()
	want := Result{Allowed: allowed, Remaining: remaining, RetryAfter: -1, ResetAfter: time.Duration(reset) * time.Microsecond}
	if !allowed {
		want.RetryAfter = time.Duration(retry) * time.Microsecond
	}
	if len(d.Results) != 1 {
		t.Fatalf("%s: %+v", what, d)
	}
	want.Limit = d.Results[0].Limit
	if d.Results[0] != want {
		t.Fatalf("%s: %+v, want %+v", what, d.Results[0], want)
	}
}

// A funnel leaking one unit a minute, so that the test's own time never
// frees a unit: T = 1 minute, tau = 10 minutes.
func TestFunnelSettle(t *testing.T) {
	c := dial(t)
	p := redistest.Prefix(t)
	l := mustLimit(t)(NewFunnel(10, 1, time.Minute))
	key := p + "{f}:0"
	decide := func(cost int64, checkOnly bool) Decision {
		return c.decide("", []Check{{Key: key, Limit: l, Cost: cost, CheckOnly: checkOnly}})
	}
	settle := func(at, reserved, cost int64) Settlement {
		return c.settle([]Settle{{Key: key, Limit: l, At: at, Reserved: reserved, Cost: cost}})
	}
	d0 := decide(4, false) // TAT n0 + 4T
	n0 := d0.Now
	wantResult(t, "reserve 4", d0, true, 6, -1, 4*minute)
	// A refund restores capacity: TAT n0 + T.
	wantSettled(t, "refund 3", settle(n0, 4, 1), -3, 9)
	d := decide(9, false) // TAT n0 + 10T
	wantResult(t, "cost 9 after the refund", d, true, 0, -1, n0+10*minute-d.Now)
	// An overdraw: TAT n0 + 31T, 21 units past capacity.
	wantSettled(t, "overdraw", settle(d.Now, 9, 30), 21, -21)
	d = decide(1, false)
	wantResult(t, "in debt", d, false, 0, n0+22*minute-d.Now, n0+31*minute-d.Now)
	d = decide(0, true)
	wantResult(t, "check-only in debt", d, false, 0, n0+22*minute-d.Now, n0+31*minute-d.Now)
	// Refund it all: TAT n0 + T again.
	wantSettled(t, "refund 30", settle(n0, 30, 0), -30, 9)
	// A refund past now empties the funnel: one (partial) unit was held.
	wantSettled(t, "refund to empty", settle(n0, 5, 0), -1, 10)
	if n, _ := c.do("EXISTS", key).Int64(); n != 0 {
		t.Fatal("an empty funnel keeps its key")
	}
	// Nothing reserved: charged now, unchecked, kept while it counts.
	wantSettled(t, "nothing reserved", settle(n0, 0, 3), 3, 7)
	if ttl, _ := c.do("PTTL", key).Int64(); ttl <= 3*60_000-10_000 || ttl > 3*60_000 {
		t.Fatalf("PTTL %d, want 3 minutes", ttl)
	}
}

// Check-only admits while one unit is left, charges nothing, and denies
// with cost 1's retry.
func TestCheckOnly(t *testing.T) {
	c := dial(t)
	p := redistest.Prefix(t)
	for _, l := range []Limit{
		mustLimit(t)(NewFunnel(2, 1, time.Minute)),
		mustLimit(t)(NewSlidingLog(2, time.Minute)),
		mustLimit(t)(NewSlidingCounter(2, time.Hour)),
	} {
		t.Run(l.Algorithm.String(), func(t *testing.T) {
			key := p + "{" + l.Algorithm.String() + "}:0"
			check := []Check{{Key: key, Limit: l, Cost: 2, CheckOnly: true}}
			d := c.decide("", check)
			wantResult(t, "fresh", d, true, 2, -1, 0)
			if n, _ := c.do("EXISTS", key).Int64(); n != 0 {
				t.Fatal("check-only wrote the key")
			}
			d0 := c.decide("", []Check{{Key: key, Limit: l, Cost: 1}})
			d = c.decide("", check)
			if !d.Allowed() || d.Results[0].Remaining != 1 {
				t.Fatalf("one left: %+v", d)
			}
			c.decide("", []Check{{Key: key, Limit: l, Cost: 1}})
			d = c.decide("", check)
			want := c.decide("", []Check{{Key: key, Limit: l, Cost: 1}})
			if d.Allowed() || d.Results[0].Remaining != 0 || want.Allowed() {
				t.Fatalf("none left: check-only %+v, cost 1 %+v", d, want)
			}
			// Cost 1's retry, on the clock of each call.
			if d.Results[0].RetryAfter-want.Results[0].RetryAfter != time.Duration(want.Now-d.Now)*time.Microsecond {
				t.Fatalf("check-only retry %v at %d, cost 1's %v at %d", d.Results[0].RetryAfter, d.Now, want.Results[0].RetryAfter, want.Now)
			}
			if l.Algorithm == Funnel && d.Results[0].RetryAfter != time.Duration(d0.Now+minute-d.Now)*time.Microsecond {
				t.Fatalf("funnel retry %v, want %dus", d.Results[0].RetryAfter, d0.Now+minute-d.Now)
			}
		})
	}
}

// A counter of 10 an hour; the numbers hold within one window, and the
// test tries again on a fresh key if it straddles two.
func TestCounterSettle(t *testing.T) {
	for attempt := 1; !counterSettle(t, attempt); attempt++ {
		if attempt == 5 {
			t.Fatal("five runs straddled an hour's boundary")
		}
	}
}

func counterSettle(t *testing.T, attempt int) bool {
	c := dial(t)
	p := redistest.Prefix(t)
	l := mustLimit(t)(NewSlidingCounter(10, time.Hour))
	const w = int64(3_600_000) // ms
	key := p + "{" + string(rune('a'+attempt)) + "}:0"
	decide := func(cost int64) Decision { return c.decide("", []Check{{Key: key, Limit: l, Cost: cost}}) }
	settle := func(at, reserved, cost int64) Settlement {
		return c.settle([]Settle{{Key: key, Limit: l, At: at, Reserved: reserved, Cost: cost}})
	}
	d0 := decide(5)
	n0 := d0.Now
	idx0, _ := counterWindow(n0, w)
	sameWindow := func(now int64) bool { idx, _ := counterWindow(now, w); return idx == idx0 }
	s := settle(n0, 5, 2)
	s2 := settle(n0, 2, 25)
	d := decide(1)
	if !sameWindow(d.Now) {
		return false
	}
	wantSettled(t, "refund", s, -3, 8)
	wantSettled(t, "overdraw", s2, 23, -15)
	// cur 25: the next window's start must see 25 * (w - e) / w + 1 <= 10.
	_, e := counterWindow(d.Now, w)
	sub := d.Now % 1000
	wait := w - 9*w/25
	wantResult(t, "in debt", d, false, 0, (w-e+wait)*1000-sub, (2*w-e)*1000-sub)
	all := settle(n0, 25, 0)
	// A record two windows old is gone: a refund is nothing, a charge is now.
	agedRefund, agedCharge := settle(n0-2*w*1000, 3, 1), settle(n0-2*w*1000, 3, 7)
	// A record of the previous window adjusts it, never below 0.
	prev, prevRefund := settle(n0-w*1000, 2, 5), settle(n0-w*1000, 5, 0)
	if !sameWindow(prevRefund.Now) {
		return false
	}
	wantSettled(t, "refund all", all, -25, 10)
	wantSettled(t, "aged refund", agedRefund, 0, 10)
	wantSettled(t, "aged charge", agedCharge, 4, 6)
	_, e = counterWindow(prev.Now, w)
	wantSettled(t, "previous window", prev, 3, (10*w-3*(w-e)-4*w)/w)
	wantSettled(t, "previous window refund", prevRefund, -3, 6)
	if ttl, _ := c.do("PTTL", key).Int64(); ttl <= 0 || ttl > 2*w-e {
		t.Fatalf("PTTL %d, want <= %d", ttl, 2*w-e)
	}
	return true
}
