package algorithms

import (
	"math/rand/v2"
	"testing"
	"time"
)

// Known periods across daylight-saving changes, month ends and a leap day.
func TestCalendarKnownPeriods(t *testing.T) {
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		cal        Calendar
		at         string
		start, end string
	}{
		// New York springs forward on 2026-03-08: a 23-hour day.
		{Calendar{Unit: Day, Zone: "America/New_York"}, "2026-03-08T12:00:00Z", "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z"},
		// and falls back on 2026-11-01: a 25-hour day, and the repeated
		// hour of 01:00 is one period of two hours.
		{Calendar{Unit: Day, Zone: "America/New_York"}, "2026-11-01T06:30:00Z", "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z"},
		{Calendar{Unit: Hour, Zone: "America/New_York"}, "2026-11-01T06:30:00Z", "2026-11-01T05:00:00Z", "2026-11-01T07:00:00Z"},
		{Calendar{Unit: Hour, Zone: "America/New_York"}, "2026-03-08T06:59:59Z", "2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z"},
		// Berlin's October 2026 has 31 days and one more hour.
		{Calendar{Unit: Month, Zone: "Europe/Berlin"}, "2026-10-25T01:30:00Z", "2026-09-30T22:00:00Z", "2026-10-31T23:00:00Z"},
		{Calendar{Unit: Day, Zone: "Europe/Berlin"}, "2026-10-25T01:30:00Z", "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z"},
		// February 2028 has 29 days; its last one is a period of its own.
		{Calendar{Unit: Month, Zone: "Europe/Berlin"}, "2028-02-29T22:59:59Z", "2028-01-31T23:00:00Z", "2028-02-29T23:00:00Z"},
		{Calendar{Unit: Month, Zone: "Europe/Berlin"}, "2028-02-29T23:00:00Z", "2028-02-29T23:00:00Z", "2028-03-31T22:00:00Z"},
		{Calendar{Unit: Day, Zone: "UTC"}, "2028-02-29T00:00:00Z", "2028-02-29T00:00:00Z", "2028-03-01T00:00:00Z"},
		{Calendar{Unit: Month, Zone: "UTC"}, "2026-12-31T23:59:59Z", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		// Weeks from Monday, and from Sunday, over New York's change.
		{Calendar{Unit: Week, WeekStart: time.Monday, Zone: "America/New_York"}, "2026-03-08T12:00:00Z", "2026-03-02T05:00:00Z", "2026-03-09T04:00:00Z"},
		{Calendar{Unit: Week, WeekStart: time.Sunday, Zone: "America/New_York"}, "2026-03-08T12:00:00Z", "2026-03-08T05:00:00Z", "2026-03-15T04:00:00Z"},
		// Santiago skips midnight (2026-09-06 begins at 01:00).
		{Calendar{Unit: Day, Zone: "America/Santiago"}, "2026-09-06T12:00:00Z", "2026-09-06T04:00:00Z", "2026-09-07T03:00:00Z"},
		// Kolkata is 5:30 ahead all year.
		{Calendar{Unit: Hour, Zone: "Asia/Kolkata"}, "2026-06-01T10:45:00Z", "2026-06-01T10:30:00Z", "2026-06-01T11:30:00Z"},
	}
	for _, c := range cases {
		start, end, err := c.cal.Bounds(utc(c.at))
		if err != nil {
			t.Fatal(err)
		}
		if !start.Equal(utc(c.start)) || !end.Equal(utc(c.end)) {
			t.Errorf("%v %s at %s: [%s, %s), want [%s, %s)", c.cal.Unit, c.cal.Zone, c.at,
				start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), c.start, c.end)
		}
	}
}

// Bounds agree with the definition computed another way: scan the local
// clock's fields (time.Time's own calendar) hour by hour and find each
// instant it first shows a later period, to the second.
func TestCalendarBoundsMatchDefinition(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	zones := []string{"UTC", "America/New_York", "Europe/Berlin", "America/Santiago", "Australia/Lord_Howe", "Asia/Kolkata", "Pacific/Apia"}
	// Instants near changes, month ends and the leap day, then random ones.
	var ats []int64
	for _, s := range []string{"2026-03-08T07:00:00Z", "2026-11-01T06:00:00Z", "2026-03-29T01:00:00Z", "2026-10-25T01:00:00Z",
		"2028-02-29T23:00:00Z", "2028-03-01T00:00:00Z", "2026-12-31T23:00:00Z", "2011-12-30T10:00:00Z", "2026-04-05T15:00:00Z"} {
		v, _ := time.Parse(time.RFC3339, s)
		for d := int64(-7200); d <= 7200; d += 1800 {
			ats = append(ats, v.Unix()+d)
		}
	}
	for range 40 {
		ats = append(ats, 1262304000+rng.Int64N(30*365*86400)) // 2010 to 2040
	}
	for _, zone := range zones {
		loc, err := location(zone)
		if err != nil {
			t.Fatal(err)
		}
		for _, unit := range []CalendarUnit{Hour, Day, Week, Month} {
			cal := Calendar{Unit: unit, Zone: zone}
			if unit == Week {
				cal.WeekStart = time.Weekday(rng.IntN(7))
			}
			for _, at := range ats {
				got, err := cal.bounds(at)
				if err != nil {
					t.Fatal(err)
				}
				if want := scanBounds(cal, loc, at); got != want {
					t.Fatalf("%v %s at %s: %v, want %v", unit, zone, time.Unix(at, 0).UTC(), got, want)
				}
			}
		}
	}
}

// localKey orders the periods the local clock shows at t, from its fields.
func localKey(cal Calendar, loc *time.Location, t int64) int64 {
	l := time.Unix(t, 0).In(loc)
	y, m, d := l.Date()
	switch cal.Unit {
	case Hour:
		return ((int64(y)*13+int64(m))*32+int64(d))*24 + int64(l.Hour())
	case Day:
		return (int64(y)*13+int64(m))*32 + int64(d)
	case Week:
		back := (int(l.Weekday()) - int(cal.WeekStart) + 7) % 7
		s := time.Date(y, m, d-back, 12, 0, 0, 0, time.UTC)
		return s.Unix() / 86400
	}
	return int64(y)*13 + int64(m)
}

func scanBounds(cal Calendar, loc *time.Location, at int64) bounds {
	from := at - cal.Unit.lookback() - 40*86400
	top := localKey(cal, loc, from)
	var found []int64
	for s := from; ; {
		next := s + 1800
		if localKey(cal, loc, next) <= top {
			s = next
			continue
		}
		lo, hi := s, next // the first second past lo showing a later period
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			if localKey(cal, loc, mid) > top {
				hi = mid
			} else {
				lo = mid
			}
		}
		top = localKey(cal, loc, hi)
		found = append(found, hi)
		s = hi
		if n := len(found); n >= 2 && found[n-2] > at {
			break
		}
	}
	j := len(found) - 3
	for found[j] > at {
		j--
	}
	return bounds{found[j-1], found[j], found[j+1], found[j+2]}
}

func TestCalendarValidate(t *testing.T) {
	for _, c := range []Calendar{{Unit: 0, Zone: "UTC"}, {Unit: Day, Zone: "Mars/Olympus"}, {Unit: Day, Zone: ""},
		{Unit: Week, WeekStart: 7, Zone: "UTC"}} {
		if _, err := NewCalendar(5, c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	if _, err := NewCalendar(0, Calendar{Unit: Day, Zone: "UTC"}); err == nil {
		t.Error("limit 0: no error")
	}
	l, err := NewCalendar(50, Calendar{Unit: Day, WeekStart: time.Monday, Zone: "Europe/Berlin"})
	if err != nil || l.Calendar.WeekStart != 0 || l.Period != 24*time.Hour {
		t.Errorf("a day's week start is dropped: %+v, %v", l, err)
	}
}
