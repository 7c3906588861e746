package algorithms

import (
	"strconv"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// A log of 10 a minute: an admission is one entry of its weight, and a
// retry walks the weights oldest first.
func TestSlidingLogSettle(t *testing.T) {
	c := dial(t)
	p := redistest.Prefix(t)
	l := mustLimit(t)(NewSlidingLog(10, time.Minute))
	key := p + "{log}:0"
	decide := func(cost int64, checkOnly bool) Decision {
		return c.decide("", []Check{{Key: key, Limit: l, Cost: cost, CheckOnly: checkOnly}})
	}
	settle := func(at, reserved, cost int64) Settlement {
		return c.settle([]Settle{{Key: key, Limit: l, At: at, Reserved: reserved, Cost: cost}})
	}
	d := decide(4, false)
	n0 := d.Now
	wantResult(t, "reserve 4", d, true, 6, -1, minute)
	if n, _ := c.do("ZCARD", key).Int64(); n != 2 {
		t.Fatalf("ZCARD %d after a cost of 4, want 2: the entry and the total", n)
	}
	wantSettled(t, "refund 3", settle(n0, 4, 1), -3, 9)
	d = decide(2, false)
	n1 := d.Now
	wantResult(t, "cost 2 after the refund", d, true, 7, -1, minute)
	// Entries n0 (weight 15) and n1 (weight 2): 7 past capacity.
	wantSettled(t, "overdraw", settle(n0, 1, 15), 14, -7)
	d = decide(1, false) // the 8th oldest unit is n0's
	wantResult(t, "in debt, cost 1", d, false, 0, n0+minute-d.Now, n1+minute-d.Now)
	d = decide(9, false) // the 16th is n1's
	wantResult(t, "in debt, cost 9", d, false, 0, n1+minute-d.Now, n1+minute-d.Now)
	d = decide(0, true)
	wantResult(t, "check-only in debt", d, false, 0, n0+minute-d.Now, n1+minute-d.Now)
	d = decide(0, false)
	wantResult(t, "peek in debt", d, false, 0, n0+minute-d.Now, n1+minute-d.Now)
	// A settle to 0 removes the entry; once gone, a charge is a new entry.
	wantSettled(t, "refund all", settle(n0, 15, 0), -15, 8)
	s := settle(n0, 15, 20)
	wantSettled(t, "charge of a removed entry", s, 5, 3)
	// A record out of the window: a refund is nothing, a charge is now.
	wantSettled(t, "aged refund", settle(n0-minute, 3, 1), 0, 3)
	wantSettled(t, "aged charge", settle(n0-minute, 3, 6), 3, 0)
	wantSettled(t, "nothing reserved", settle(n0, 0, 2), 2, -2)
	d = decide(0, true) // n1 (2), then s.Now (5): the 3rd oldest unit is s.Now's
	wantResult(t, "check-only", d, false, 0, s.Now+minute-d.Now, lastEntry(t, c, key)+minute-d.Now)
	if ttl, _ := c.do("PTTL", key).Int64(); ttl <= 50_000 || ttl > 60_000 {
		t.Fatalf("PTTL %d, want a minute", ttl)
	}
}

// lastEntry is the score of the newest entry of a log.
func lastEntry(t *testing.T, c *conn, key string) int64 {
	t.Helper()
	last, _ := c.do("ZRANGE", key, "-1", "-1", "WITHSCORES").Array()
	score, err := last[1].Text()
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(score, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Memory is per admission, not per unit.
func TestSlidingLogLargeAdmissionIsOneMember(t *testing.T) {
	c := dial(t)
	p := redistest.Prefix(t)
	l := mustLimit(t)(NewSlidingLog(100_000, time.Minute))
	key := p + "{log}:0"
	d := c.decide("", []Check{{Key: key, Limit: l, Cost: 100_000}})
	n0 := d.Now
	wantResult(t, "cost 100,000", d, true, 0, -1, minute)
	if n, _ := c.do("ZCARD", key).Int64(); n > 2 {
		t.Fatalf("ZCARD %d, want at most 2", n)
	}
	if ttl, _ := c.do("PTTL", key).Int64(); ttl <= 50_000 || ttl > 60_000 {
		t.Fatalf("PTTL %d, want a minute", ttl)
	}
	d = c.decide("", []Check{{Key: key, Limit: l, CheckOnly: true}})
	wantResult(t, "check-only", d, false, 0, n0+minute-d.Now, n0+minute-d.Now)
	wantSettled(t, "refund", c.settle([]Settle{{Key: key, Limit: l, At: n0, Reserved: 100_000, Cost: 40_000}}), -60_000, 60_000)
	if n, _ := c.do("ZCARD", key).Int64(); n > 2 {
		t.Fatalf("ZCARD %d after the settle, want at most 2", n)
	}
}

// Members are unique when several entries share one microsecond: the
// settles of one call share its time.
func TestSlidingLogMembersUniqueWithinOneMicrosecond(t *testing.T) {
	c := dial(t)
	p := redistest.Prefix(t)
	l := mustLimit(t)(NewSlidingLog(20, time.Minute))
	key := p + "{log}:0"
	var settles []Settle
	for _, cost := range []int64{1, 4, 4, 1, 4} {
		settles = append(settles, Settle{Key: key, Limit: l, Cost: cost})
	}
	s := c.settle(settles)
	if r := s.Results[4]; r != (Settled{Applied: 4, Remaining: 6}) {
		t.Fatalf("%+v", s)
	}
	members, err := c.do("ZRANGE", key, "1", "-1", "WITHSCORES").Array()
	if err != nil || len(members) != 10 {
		t.Fatalf("ZRANGE: %v, %v", members, err)
	}
	seen := map[string]bool{}
	for i := 0; i < len(members); i += 2 {
		m, _ := members[i].Text()
		if score, _ := members[i+1].Text(); seen[m] || score != strconv.FormatInt(s.Now, 10) {
			t.Fatalf("members %v: want 5 distinct members at %d", members, s.Now)
		}
		seen[m] = true
	}
}

// A key the one-member-per-unit script wrote reads as weight 1 per member.
func TestSlidingLogReadsOldKeys(t *testing.T) {
	c := dial(t)
	p := redistest.Prefix(t)
	l := mustLimit(t)(NewSlidingLog(5, time.Minute))
	key := p + "{log}:0"
	now := c.decide("", []Check{{Key: p + "{clock}:0", Limit: l, Cost: 0}}).Now
	old, older := now-2000, now-5000
	o, o2 := strconv.FormatInt(old, 10), strconv.FormatInt(older, 10)
	c.do("ZADD", key, o2, o2, o2, o2+".1", o2, o2+".2", o, o)
	c.do("PEXPIRE", key, "60000")
	d := c.decide("", []Check{{Key: key, Limit: l, Cost: 1}})
	wantResult(t, "one left", d, true, 0, -1, minute)
	d = c.decide("", []Check{{Key: key, Limit: l, Cost: 1}})
	wantResult(t, "full", d, false, 0, older+minute-d.Now, lastEntry(t, c, key)+minute-d.Now)
	// The settle of an old unit gives the key its total: 7 units.
	wantSettled(t, "overdraw", c.settle([]Settle{{Key: key, Limit: l, At: older, Reserved: 1, Cost: 3}}), 2, -2)
	d = c.decide("", []Check{{Key: key, Limit: l, Cost: 4}}) // the 6th oldest unit is old's
	wantResult(t, "in debt", d, false, 0, old+minute-d.Now, lastEntry(t, c, key)+minute-d.Now)
}
