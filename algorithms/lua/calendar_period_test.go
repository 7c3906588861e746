package lua_test

import (
	"fmt"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms/lua"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// calendar.lua's calendar_period, called directly with a chosen now rather
// than through Redis's clock, which a test cannot stop on an instant: a
// period is [start, end), so each bound is the first instant of the
// period it starts. Kills "<" turned "<=" (or ">=" turned ">") in any of
// its comparisons of now.
func TestCalendarPeriodEndIsTheNextPeriodsStart(t *testing.T) {
	s := redistest.Start(t)
	c, err := redistest.Dial(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	script := lua.Code() + "local s, e = calendar_period(ARGV[1], tonumber(ARGV[2]))\n" +
		"return {s or -1, e or -1, limit_b('p', ARGV[1], tonumber(ARGV[2])) or -1}\n"
	const raw = "1000:2000:3600:7200" // seconds
	us := func(s int64) int64 { return s * 1000000 }
	for _, tc := range []struct {
		now        int64 // us
		start, end int64 // us, -1 for none
	}{
		{us(1000) - 1, -1, -1},
		{us(1000), us(1000), us(2000)},
		{us(2000) - 1, us(1000), us(2000)},
		{us(2000), us(2000), us(3600)},
		{us(3600) - 1, us(2000), us(3600)},
		{us(3600), us(3600), us(7200)},
		{us(7200) - 1, us(3600), us(7200)},
		{us(7200), -1, -1},
	} {
		v, err := c.Do("EVAL", script, "0", raw, fmt.Sprint(tc.now))
		if err != nil {
			t.Fatal(err)
		}
		got := make([]int64, len(v.Elems))
		for i, e := range v.Elems {
			got[i] = e.Int
		}
		if want := []int64{tc.start, tc.end, tc.end}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("now %d: start, end, limit_b %v, want %v", tc.now, got, want)
		}
	}
}

// calendar.lua's calendar_settle, called directly at a chosen now: the
// settle of an admission made in a period that has ended refunds nothing
// into the period now (whose count is another's), while a charge beyond
// its reservation goes to the period now, and a refund in the admission's
// own period, from its first instant on, is made. Kills the loss of the "at < s" rule, which only the
// randomised model test caught, or its "<" turned "<=".
func TestCalendarSettleAfterItsPeriodRefundsNothing(t *testing.T) {
	s := redistest.Start(t)
	c, err := redistest.Dial(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	script := lua.Code() + "return {calendar_settle(KEYS[1], 10, ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), " +
		"tonumber(ARGV[4]), tonumber(ARGV[5]))}\n"
	key := redistest.Prefix(t) + "{u}:0"
	// Periods of [1000, 2000), [2000, 3600), [3600, 7200) seconds; now is
	// in the second, whose count is 3.
	const raw, now, end = "1000:2000:3600:7200", "2500000000", "3600000000"
	if _, err := c.Do("HSET", key, "e", end, "c", "3"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what               string
		at, reserved, cost string
		applied, remaining int64
		count              string
	}{
		{"a refund from the ended period", "1500000000", "5", "1", 0, 7, "3"},
		{"a charge beyond it from the ended period", "1500000000", "5", "7", 2, 5, "5"},
		{"a refund in its own period", "2100000000", "5", "1", -4, 9, "1"},
		{"a refund of its period's first instant", "2000000000", "2", "1", -1, 10, "0"},
	} {
		v, err := c.Do("EVAL", script, "1", key, raw, now, tc.at, tc.reserved, tc.cost)
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Elems) != 2 || v.Elems[0].Int != tc.applied || v.Elems[1].Int != tc.remaining {
			t.Errorf("%s: %v, want applied %d, remaining %d", tc.what, v, tc.applied, tc.remaining)
		}
		if got, _ := c.Do("HGET", key, "c"); string(got.Str) != tc.count {
			t.Errorf("%s: the period's count is %s, want %s", tc.what, got.Str, tc.count)
		}
	}
}
