package config

import (
	"testing"
	"time"
)

// A weekly calendar limit without week_starts has weeks that begin on
// Monday, as docs/configuration.md says. Kills a default of another day
// (calendar.json's weekly limit names its day, so no fixture catches it).
func TestCalendarWeekStartsMondayByDefault(t *testing.T) {
	c, err := Parse([]byte(`{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"client_ip"}],
		"limits":[{"algorithm":"calendar","limit":5,"period":"week"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	cal := c.Rules[0].Limits[0].Limit.Calendar
	if cal.WeekStart != time.Monday || cal.Zone != "UTC" {
		t.Fatalf("calendar %+v, want weeks from Monday in UTC", cal)
	}
	// Wednesday 2026-03-11 is in the week of Monday 2026-03-09.
	start, end, err := cal.Bounds(time.Date(2026, 3, 11, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 3, 9, 0, 0, 0, 0, time.UTC); !start.Equal(want) || !end.Equal(want.AddDate(0, 0, 7)) {
		t.Fatalf("week [%v, %v), want from %v", start.UTC(), end.UTC(), want)
	}
}
