package algorithms

import (
	"testing"
	"time"
)

// Antarctica/Troll sets its clock back two hours, from +02 to +00, at
// 01:00Z on the last Sunday of October (2026-10-25): local 03:00 becomes
// 01:00, so the local hours 01 and 02 come again. The day and the month
// around it last two hours more, and the hour that began at local 02:00
// (00:00Z) lasts until the clock first shows 03:00 again, at 03:00Z.
// Kills a walk that starts a period whenever the clock shows another one
// (f != top instead of f > top in walk): New York's one-hour change goes
// back within an hour, so the other zones never see it.
func TestCalendarTrollSetsItsClockBackTwoHours(t *testing.T) {
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	const troll = "Antarctica/Troll"
	if _, off := utc("2026-10-25T00:30:00Z").In(mustZone(t, troll)).Zone(); off != 7200 {
		t.Fatalf("Troll's offset before the change is %d s, want +02", off)
	}
	cases := []struct {
		unit       CalendarUnit
		at         string
		start, end string
	}{
		{Day, "2026-10-24T21:59:59Z", "2026-10-23T22:00:00Z", "2026-10-24T22:00:00Z"},
		{Day, "2026-10-24T22:00:00Z", "2026-10-24T22:00:00Z", "2026-10-26T00:00:00Z"},
		{Day, "2026-10-25T00:59:59Z", "2026-10-24T22:00:00Z", "2026-10-26T00:00:00Z"},
		{Day, "2026-10-25T01:00:00Z", "2026-10-24T22:00:00Z", "2026-10-26T00:00:00Z"},
		{Day, "2026-10-25T23:59:59Z", "2026-10-24T22:00:00Z", "2026-10-26T00:00:00Z"},
		{Day, "2026-10-26T00:00:00Z", "2026-10-26T00:00:00Z", "2026-10-27T00:00:00Z"},
		{Month, "2026-10-25T01:30:00Z", "2026-09-30T22:00:00Z", "2026-11-01T00:00:00Z"},
		{Month, "2026-10-31T23:59:59Z", "2026-09-30T22:00:00Z", "2026-11-01T00:00:00Z"},
		{Month, "2026-11-01T00:00:00Z", "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z"},
		{Hour, "2026-10-24T23:59:59Z", "2026-10-24T23:00:00Z", "2026-10-25T00:00:00Z"},
		{Hour, "2026-10-25T00:30:00Z", "2026-10-25T00:00:00Z", "2026-10-25T03:00:00Z"},
		{Hour, "2026-10-25T01:00:00Z", "2026-10-25T00:00:00Z", "2026-10-25T03:00:00Z"},
		{Hour, "2026-10-25T02:59:59Z", "2026-10-25T00:00:00Z", "2026-10-25T03:00:00Z"},
		{Hour, "2026-10-25T03:00:00Z", "2026-10-25T03:00:00Z", "2026-10-25T04:00:00Z"},
	}
	for _, c := range cases {
		cal := Calendar{Unit: c.unit, Zone: troll}
		at := utc(c.at)
		start, end, err := cal.Bounds(at)
		if err != nil {
			t.Fatal(err)
		}
		if !start.Equal(utc(c.start)) || !end.Equal(utc(c.end)) {
			t.Errorf("%v at %s: [%s, %s), want [%s, %s)", c.unit, c.at,
				start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), c.start, c.end)
		}
		if want := scanBounds(cal, mustZone(t, troll), at.Unix()); mustBounds(t, cal, at.Unix()) != want {
			t.Errorf("%v at %s: bounds disagree with the definition %v", c.unit, c.at, want)
		}
	}
}

// A period's end is the next period's first instant: at end the bounds
// are the next period's, a microsecond before it this one's, however the
// bounds cache was left. Kills a cache or a walk that takes end as inside
// its period (t <= b[2]).
func TestCalendarEndBelongsToTheNextPeriod(t *testing.T) {
	for _, cal := range []Calendar{{Unit: Hour, Zone: "UTC"}, {Unit: Day, Zone: "Europe/Berlin"},
		{Unit: Week, WeekStart: time.Sunday, Zone: "America/New_York"}, {Unit: Month, Zone: "Antarctica/Troll"}} {
		at := time.Date(2026, 10, 20, 12, 0, 0, 0, time.UTC).Unix()
		b := mustBounds(t, cal, at) // leaves b in the cache
		end := b[2]
		if got := mustBounds(t, cal, end); got[1] != end || got[0] != b[1] {
			t.Errorf("%v %s at its end %d: %v, want the next period's", cal.Unit, cal.Zone, end, got)
		}
		mustBounds(t, cal, at)
		if got := mustBounds(t, cal, end-1); got != b {
			t.Errorf("%v %s a second before its end: %v, want %v", cal.Unit, cal.Zone, got, b)
		}
		// The Model's period, in microseconds, which the script's agrees with.
		if s, e := cal.period(end*1000000 - 1); s != b[1]*1000000 || e != end*1000000 {
			t.Errorf("%v %s: period a microsecond before its end is [%d, %d)", cal.Unit, cal.Zone, s, e)
		}
		if s, _ := cal.period(end * 1000000); s != end*1000000 {
			t.Errorf("%v %s: the period at its end starts at %d, want %d", cal.Unit, cal.Zone, s, end*1000000)
		}
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := location(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func mustBounds(t *testing.T, cal Calendar, at int64) bounds {
	t.Helper()
	b, err := cal.bounds(at)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The Model's settle of an admission whose period has ended refunds
// nothing into the period now; calendar.lua's is checked directly in
// package lua (TestCalendarSettleAfterItsPeriodRefundsNothing). Kills the
// loss of the Model's At < start rule, which only the randomised test
// that compares it with the script caught.
func TestModelCalendarSettleAfterItsPeriodRefundsNothing(t *testing.T) {
	m := NewModel()
	l := mustLimit(t)(NewCalendar(10, Calendar{Unit: Hour, Zone: "UTC"}))
	end := time.Date(2026, 10, 20, 13, 0, 0, 0, time.UTC).UnixMicro()
	old, cur := Check{Key: "{u}:0", Limit: l, Cost: 5}, Check{Key: "{u}:0", Limit: l, Cost: 3}
	if d := m.Decide(end-1, nil, []Check{old}); !d.Allowed() {
		t.Fatalf("before the end: %+v", d)
	}
	if d := m.Decide(end, nil, []Check{cur}); !d.Allowed() || d.Results[0].Remaining != 7 {
		t.Fatalf("at the end, a new period: %+v", d)
	}
	s := Settle{Key: old.Key, Limit: l, At: end - 1, Reserved: 5, Cost: 1}
	if got := m.Settle(end+1, []Settle{s}); got.Results[0] != (Settled{Applied: 0, Remaining: 7}) {
		t.Errorf("a refund from the ended period: %+v, want nothing applied, 7 left", got.Results[0])
	}
	s = Settle{Key: cur.Key, Limit: l, At: end, Reserved: 3, Cost: 1}
	if got := m.Settle(end+2, []Settle{s}); got.Results[0] != (Settled{Applied: -2, Remaining: 9}) {
		t.Errorf("a refund in its own period: %+v, want -2 applied, 9 left", got.Results[0])
	}
}
