package algorithms

import (
	"strconv"
	"sync"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
)

// CalendarUnit is the length of a Calendar limit's period.
type CalendarUnit uint8

const (
	Hour CalendarUnit = iota + 1
	Day
	Week
	Month
)

var unitNames = [...]string{Hour: "hour", Day: "day", Week: "week", Month: "month"}

func (u CalendarUnit) String() string {
	if u >= Hour && u <= Month {
		return unitNames[u]
	}
	return format.Sprintf("CalendarUnit(%d)", uint8(u))
}

// ParseCalendarUnit is the inverse of CalendarUnit.String.
func ParseCalendarUnit(s string) (CalendarUnit, error) {
	for u := Hour; u <= Month; u++ {
		if unitNames[u] == s {
			return u, nil
		}
	}
	return 0, format.Errorf("unknown period %q (want hour, day, week or month)", s)
}

// nominal is a unit's usual length, which RateLimit-Policy advertises.
func (u CalendarUnit) nominal() time.Duration {
	switch u {
	case Hour:
		return time.Hour
	case Day:
		return 24 * time.Hour
	case Week:
		return 7 * 24 * time.Hour
	}
	return 30 * 24 * time.Hour
}

// Calendar is the period of a Calendar limit: the hours, days, weeks or
// months of the local time in Zone, an IANA name. A period begins at the
// first instant its local hour, date, week or month begins: a day that
// starts at 01:00 because midnight was skipped begins then, and a local
// hour repeated when clocks go back belongs to the period that began at
// its first occurrence (so the hour of 01:00 lasts two hours that night).
type Calendar struct {
	Unit CalendarUnit
	// WeekStart is the first day of a week; 0 (Sunday) for other units.
	WeekStart time.Weekday
	Zone      string
}

// NewCalendar admits at most limit units per calendar period cal. The
// count restarts at the period's first instant on Redis's clock.
func NewCalendar(limit int64, cal Calendar) (Limit, error) {
	if cal.Unit != Week {
		cal.WeekStart = 0
	}
	l := Limit{Algorithm: CalendarWindow, Rate: limit, Burst: limit, Period: cal.Unit.nominal(), Calendar: cal}
	return l, l.Validate()
}

func (c Calendar) validate() error {
	if c.Unit < Hour || c.Unit > Month {
		return &ParamError{Param: ParamPeriod, Want: "must be hour, day, week or month"}
	}
	if c.WeekStart < time.Sunday || c.WeekStart > time.Saturday || c.Unit != Week && c.WeekStart != 0 {
		return &ParamError{Param: ParamWeekStart, Want: "must be a day of the week, for a week only"}
	}
	if _, err := location(c.Zone); err != nil {
		return &ParamError{Param: ParamZone, Want: "must be an IANA time zone such as Europe/Berlin"}
	}
	return nil
}

var zones sync.Map // zone name -> *time.Location

// location loads a zone once per name.
func location(name string) (*time.Location, error) {
	if l, ok := zones.Load(name); ok {
		return l.(*time.Location), nil
	}
	if name == "" || name == "Local" {
		return nil, format.Errorf("no zone")
	}
	l, err := loadZone(name)
	if err != nil {
		return nil, err
	}
	zones.Store(name, l)
	return l, nil
}

// bounds are the starts of four consecutive periods, in Unix seconds,
// such that at lies in [b[1], b[2]).
type bounds [4]int64

// Bounds returns the period [start, end) that holds t.
func (c Calendar) Bounds(t time.Time) (start, end time.Time, err error) {
	b, err := c.bounds(t.Unix())
	if err != nil {
		return start, end, err
	}
	return time.Unix(b[1], 0), time.Unix(b[2], 0), nil
}

var boundsCache struct {
	sync.Mutex
	m map[Calendar]bounds
}

// bounds returns the bounds around t (Unix seconds), from a cache that
// holds each calendar's latest.
func (c Calendar) bounds(t int64) (bounds, error) {
	boundsCache.Lock()
	b, ok := boundsCache.m[c]
	boundsCache.Unlock()
	if ok && b[1] <= t && t < b[2] {
		return b, nil
	}
	loc, err := location(c.Zone)
	if err != nil {
		return b, err
	}
	b = c.walk(t, loc)
	boundsCache.Lock()
	if boundsCache.m == nil || len(boundsCache.m) > 64 {
		boundsCache.m = map[Calendar]bounds{}
	}
	boundsCache.m[c] = b
	boundsCache.Unlock()
	return b, nil
}

// lookback is how far before t walk starts: past two whole periods, and
// past any time the local clock repeats.
func (u CalendarUnit) lookback() int64 {
	return [...]int64{Hour: 3, Day: 10, Week: 30, Month: 100}[u] * 86400
}

// walk finds the period starts around t by walking the zone's offsets
// from t - lookback on: within one offset, local time runs with real
// time; a period starts where the local clock first reaches a later
// period than it has ever shown (floor of the wall clock).
func (c Calendar) walk(t int64, loc *time.Location) bounds {
	var found []int64
	s := t - c.Unit.lookback()
	top := c.floor(wall(s, loc))
	for len(found) < 4 || found[len(found)-2] <= t {
		off, ze := span(s, loc)
		if f := c.floor(s + int64(off)); f > top { // the clock jumped into a later period
			top = f
			found = append(found, s)
		}
		for {
			next := c.next(top)
			at := next - int64(off)
			if at >= ze {
				break
			}
			top = next
			found = append(found, at)
			if len(found) >= 4 && found[len(found)-2] > t {
				break
			}
		}
		s = ze
	}
	j := len(found) - 3 // found[j] <= t < found[j+1]
	for found[j] > t {
		j--
	}
	return bounds{found[j-1], found[j], found[j+1], found[j+2]}
}

// span returns loc's offset at s and the end of the span it holds
// (1<<62 if it never ends).
func span(s int64, loc *time.Location) (off int, end int64) {
	t := time.Unix(s, 0).In(loc)
	_, off = t.Zone()
	_, e := t.ZoneBounds()
	switch {
	case e.IsZero():
		return off, 1 << 62
	case e.Unix() <= s:
		// go.dev/issue/81583: in a leap year's last UTC day, a span of the
		// zone's TZ rule ends at that day's start; it holds to the year's end.
		return off, time.Date(t.UTC().Year()+1, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	}
	return off, e.Unix()
}

func wall(t int64, loc *time.Location) int64 {
	_, off := time.Unix(t, 0).In(loc).Zone()
	return t + int64(off)
}

// floor is the start of the period holding wall clock w (seconds, read
// as UTC); next the start of the period after the one starting at f.
func (c Calendar) floor(w int64) int64 {
	day := floorDiv(w, 86400)
	switch c.Unit {
	case Hour:
		return floorDiv(w, 3600) * 3600
	case Day:
		return day * 86400
	case Week:
		wd := (day + 4) % 7 // 1970-01-01 was a Thursday
		if wd < 0 {
			wd += 7
		}
		back := (wd - int64(c.WeekStart) + 7) % 7
		return (day - back) * 86400
	}
	y, m, _ := time.Unix(w, 0).UTC().Date()
	return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC).Unix()
}

func (c Calendar) next(f int64) int64 {
	switch c.Unit {
	case Hour:
		return f + 3600
	case Day:
		return f + 86400
	case Week:
		return f + 7*86400
	}
	y, m, _ := time.Unix(f, 0).UTC().Date()
	return time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC).Unix()
}

// wire is a calendar limit's b as the script takes it: the bounds around
// the proxy's clock, "T0:T1:T2:T3". Redis's clock picks among them.
func (c Calendar) wire(dst []byte) ([]byte, error) {
	b, err := c.bounds(wallClock().Unix())
	if err != nil {
		return dst, err
	}
	for i, v := range b {
		if i > 0 {
			dst = append(dst, ':')
		}
		dst = strconv.AppendInt(dst, v, 10)
	}
	return dst, nil
}

// wallClock is the proxy's clock, which only picks the bounds sent.
var wallClock = time.Now

// period is the [start, end) in microseconds that holds now, as the
// script picks it when the bounds sent hold now.
func (c Calendar) period(now int64) (start, end int64) {
	b, err := c.bounds(floorDiv(now, 1000000))
	if err != nil {
		return 0, 0
	}
	return b[1] * 1000000, b[2] * 1000000
}
