package algorithms

import (
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// Two slots: two requests hold them, a third is denied until the earliest
// slot would expire, and a release frees one at once. Every number is
// checked against the Redis time the script reported.
func TestConcurrencyAcquireAndRelease(t *testing.T) {
	c := dial(t)
	key := redistest.Prefix(t) + "{u}:0"
	l := mustLimit(t)(NewConcurrency(2, time.Minute))
	acquire := func(slot int64) Decision {
		t.Helper()
		return c.decide("", []Check{{Key: key, Limit: l, Cost: slot}})
	}
	d1 := acquire(101)
	if want := (Result{Allowed: true, Limit: 2, Remaining: 1, RetryAfter: -1, ResetAfter: time.Minute}); d1.Results[0] != want {
		t.Fatalf("first: %+v, want %+v", d1.Results[0], want)
	}
	if got, _ := c.do("ZSCORE", key, "101").Text(); got != strconv.FormatInt(d1.Now+60_000_000, 10) {
		t.Fatalf("slot 101 expires at %s, want acquired at %d + 1m", got, d1.Now)
	}
	if ttl, _ := c.do("PTTL", key).Int64(); ttl <= 59_000 || ttl > 60_000 {
		t.Fatalf("PTTL %dms, want the slot's minute", ttl)
	}
	d2 := acquire(102)
	if r := d2.Results[0]; !r.Allowed || r.Remaining != 0 || r.ResetAfter != time.Minute {
		t.Fatalf("second: %+v", r)
	}
	d3 := acquire(103)
	want := Result{Limit: 2, RetryAfter: time.Duration(d1.Now+60_000_000-d3.Now) * time.Microsecond,
		ResetAfter: time.Duration(d2.Now+60_000_000-d3.Now) * time.Microsecond}
	if d3.Results[0] != want {
		t.Fatalf("third: %+v, want %+v (until the first slot expires)", d3.Results[0], want)
	}
	if n, _ := c.do("ZCARD", key).Int64(); n != 2 {
		t.Fatalf("%d slots after a denial, want 2", n)
	}
	// A peek sees no slot free; a check only is denied as the third was.
	if r := c.decide("", []Check{{Key: key, Limit: l}}).Results[0]; !r.Allowed || r.Remaining != 0 {
		t.Fatalf("peek: %+v", r)
	}
	if r := c.decide("", []Check{{Key: key, Limit: l, CheckOnly: true}}).Results[0]; r.Allowed || r.RetryAfter <= 0 {
		t.Fatalf("check only: %+v", r)
	}
	st := c.settle([]Settle{Release(key, l, 101)})
	if want := []Settled{{Applied: -1, Remaining: 1}}; !reflect.DeepEqual(st.Results, want) {
		t.Fatalf("release: %+v, want %+v", st.Results, want)
	}
	if st := c.settle([]Settle{Release(key, l, 101)}); st.Results[0] != (Settled{Remaining: 1}) {
		t.Fatalf("a second release of one slot: %+v, want nothing freed", st.Results[0])
	}
	if r := acquire(103).Results[0]; !r.Allowed || r.Remaining != 0 {
		t.Fatalf("after the release: %+v", r)
	}
	for _, slot := range []int64{102, 103} {
		c.settle([]Settle{Release(key, l, slot)})
	}
	if n, _ := c.do("EXISTS", key).Int64(); n != 0 {
		t.Fatal("the key outlived its last slot")
	}
}

// A slot never released expires after the limit's maximum duration: the
// next check drops it, and a late release finds nothing. The wait is on
// Redis's clock, not a fixed sleep.
func TestConcurrencySlotExpires(t *testing.T) {
	c := dial(t)
	key := redistest.Prefix(t) + "{u}:0"
	l := mustLimit(t)(NewConcurrency(1, 30*time.Millisecond))
	d := c.decide("", []Check{{Key: key, Limit: l, Cost: 1}})
	expiry := d.Now + 30_000
	for {
		d = c.decide("", []Check{{Key: key, Limit: l, Cost: 2}})
		if d.Now >= expiry {
			break
		}
		if r := d.Results[0]; r.Allowed || r.RetryAfter != time.Duration(expiry-d.Now)*time.Microsecond {
			t.Fatalf("%dus before the slot expires: %+v", expiry-d.Now, r)
		}
		time.Sleep(time.Millisecond)
	}
	if r := d.Results[0]; !r.Allowed {
		t.Fatalf("at %dus past the expiry: %+v", d.Now-expiry, r)
	}
	if members, _ := c.do("ZRANGE", key, "0", "-1").Array(); len(members) != 1 || string(members[0].Str) != "2" {
		t.Fatalf("slots %v, want only the new one", members)
	}
	if st := c.settle([]Settle{Release(key, l, 1)}); st.Results[0].Applied != 0 {
		t.Fatalf("releasing the expired slot: %+v, want nothing freed", st.Results[0])
	}
}

// A concurrency limit takes part in the all-or-nothing verdict: denied by
// another limit, it holds no slot; full, it charges the others nothing.
func TestConcurrencyAllOrNothing(t *testing.T) {
	c := dial(t)
	p := redistest.Prefix(t)
	perMinute := mustLimit(t)(NewSlidingLog(1, time.Minute))
	slots := mustLimit(t)(NewConcurrency(5, time.Minute))
	checks := func(slot int64) []Check {
		return []Check{{Key: p + "{u}:0", Limit: perMinute, Cost: 1}, {Key: p + "{u}:1", Limit: slots, Cost: slot}}
	}
	if d := c.decide("", checks(1)); !d.Allowed() {
		t.Fatalf("first: %+v", d)
	}
	d := c.decide("", checks(2))
	if d.Allowed() || d.Results[0].Allowed || !d.Results[1].Allowed || d.Results[1].Remaining != 4 {
		t.Fatalf("second, over the per-minute limit: %+v", d)
	}
	if n, _ := c.do("ZCARD", p+"{u}:1").Int64(); n != 1 {
		t.Fatalf("%d slots held after a denied request, want 1", n)
	}
	one := mustLimit(t)(NewConcurrency(1, time.Minute))
	perHour := mustLimit(t)(NewSlidingLog(10, time.Hour))
	full := []Check{{Key: p + "{v}:0", Limit: perHour, Cost: 1}, {Key: p + "{v}:1", Limit: one, Cost: 3}}
	c.decide("", full)
	full[1].Cost = 4
	if d := c.decide("", full); d.Allowed() || d.Results[0].Remaining != 9 {
		t.Fatalf("with no slot free: %+v", d)
	}
	if n, _ := c.do("ZCARD", p+"{v}:0").Int64(); n != 1 {
		t.Fatalf("the per-hour log holds %d entries, want 1: a request denied for want of a slot was charged", n)
	}
}

// An override may hold a concurrency limit; a choice's slot id is what
// its concurrency positions take, whatever the choice's cost.
func TestConcurrencyInChoices(t *testing.T) {
	l := mustLimit(t)(NewConcurrency(3, 90*time.Second))
	v, err := EncodeOverride([]Limit{l})
	if err != nil || v != "k:3:90000000" {
		t.Fatalf("EncodeOverride = %q, %v", v, err)
	}
	if back, err := DecodeOverride(v); err != nil || !reflect.DeepEqual(back, []Limit{l}) {
		t.Fatalf("DecodeOverride(%q) = %+v, %v", v, back, err)
	}
	c := dial(t)
	base := redistest.Prefix(t) + "{u}"
	log := mustLimit(t)(NewSlidingLog(5, time.Minute))
	ch := []Choice{{Keys: []string{base + ":0", base + ":1"}, Cost: 2, Slot: 77,
		Tiers: []Tier{{Name: "t", Limits: []Limit{log, mustLimit(t)(NewConcurrency(1, time.Minute))}}}}}
	d := c.decideCall("", nil, ch)
	if !d.Allowed() || d.Results[0].Remaining != 3 || d.Picked[1].Algorithm != Concurrency {
		t.Fatalf("first: %+v", d)
	}
	if members, _ := c.do("ZRANGE", base+":1", "0", "-1").Array(); len(members) != 1 || string(members[0].Str) != "77" {
		t.Fatalf("slots %v, want the choice's slot 77", members)
	}
	ch[0].Slot = 78
	if d := c.decideCall("", nil, ch); d.Allowed() || d.Results[0].Remaining != 3 {
		t.Fatalf("second, no slot free: %+v", d)
	}
	// An override keeps the positions' algorithms: a log, then the slots.
	over, err := EncodeOverride([]Limit{log, l})
	if err != nil {
		t.Fatal(err)
	}
	c.do("SET", base+":override", over)
	ch[0].OverrideKey = base + ":override"
	if d := c.decideCall("", nil, ch); !d.Allowed() || d.Picks[0] != PickOverride || d.Results[1].Remaining != 1 {
		t.Fatalf("under the override of 3 slots: %+v", d)
	}
}
