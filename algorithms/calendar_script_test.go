package algorithms

import (
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// redisSeconds is Redis's clock, in whole seconds.
func redisSeconds(t *testing.T, c *conn) int64 {
	t.Helper()
	v := c.do("TIME")
	s, err := strconv.ParseInt(string(v.Elems[0].Str), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// boundaryZone registers, under a name of its own, a zone of a fixed
// offset whose local hours begin at end, a Unix second: a real zone for
// the code, with a boundary that Redis's clock reaches soon.
func boundaryZone(t *testing.T, end int64) string {
	name := fmt.Sprintf("Test/%s/%d", t.Name(), end)
	zones.Store(name, time.FixedZone(name, int(-(end%3600))))
	return name
}

// Calls of a plain calendar limit, of calendar tiers with an override,
// and settles go through the script and the Model while Redis's clock
// crosses an hour's end: every Decision and Settlement must agree
// exactly, the count must restart at the end, and a settle of an
// admission made before it must take the rule stated in calendar.lua.
func TestCalendarScriptMatchesModelAcrossBoundary(t *testing.T) {
	rng, c, model, p := newProperty(t, 11)
	must := mustLimit(t)
	end := redisSeconds(t, c) + 2
	cal := Calendar{Unit: Hour, Zone: boundaryZone(t, end)}
	plain := must(NewCalendar(5, cal))
	tiers := []Tier{{Name: "team", Limits: []Limit{must(NewCalendar(3, cal))}},
		{Name: "enterprise", Limits: []Limit{must(NewCalendar(8, cal))}}}
	override, err := EncodeOverride([]Limit{must(NewCalendar(4, Calendar{Unit: Hour, Zone: "UTC"}))})
	if err != nil || override != "p:4:1" {
		t.Fatalf("override %q, %v", override, err)
	}
	var pending []admission
	seen, charged := map[string]int{}, map[string]bool{}
	endUS, lastNow := end*1000000, int64(0)
	for step := 0; ; step++ {
		user := rng.IntN(2)
		base := fmt.Sprintf("%s{u%d}", p, user)
		switch rng.IntN(8) {
		case 0:
			c.do("SET", base+":tier", "enterprise")
			model.Tiers[base+":tier"] = "enterprise"
		case 1:
			c.do("SET", base+":override", override)
			model.Overrides[base+":override"] = override
		case 2:
			c.do("DEL", base+":tier", base+":override")
			delete(model.Tiers, base+":tier")
			delete(model.Overrides, base+":override")
		}
		var now int64
		// Three admissions at least wait for the end, to be settled past
		// it: two of one user's, charged then refunded.
		if len(pending) > 3 && rng.IntN(3) == 0 || len(pending) > 0 && lastNow >= endUS {
			a := pending[0]
			pending = pending[1:]
			cost := rng.Int64N(5)
			_, next := cal.period(lastNow)
			used := model.calendarUsed(a.key, next) // the new period's, which a refund must not touch
			// Per key, the first settle past the end charges beyond its
			// reservation (charged to the period now), the next refunds
			// (nothing: its period has ended), with the new period's count
			// above 0 for the refund to leave alone.
			if across := a.at < endUS && lastNow >= endUS; across && !charged[a.key] {
				cost, charged[a.key] = a.reserved+2, true
			} else if across && used > 0 {
				cost = 0
			}
			s := []Settle{{Key: a.key, Limit: a.limit, At: a.at, Reserved: a.reserved, Cost: cost}}
			got := c.settle(s)
			if want := model.Settle(got.Now, s); !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d, settle %+v:\nscript %+v\nmodel  %+v", step, s, got, want)
			}
			now = got.Now
			if a.at < endUS && now >= endUS {
				if cost < a.reserved && used > 0 {
					seen["refunded across the end"]++
				} else if cost > a.reserved {
					seen["charged across the end"]++
				}
			}
		} else {
			checks := []Check{{Key: base + ":9", Limit: plain, Cost: 1 + rng.Int64N(2)}}
			choice := Choice{TierKey: base + ":tier", OverrideKey: base + ":override", Tiers: tiers,
				Keys: []string{base + ":0"}, Cost: 1}
			if rng.IntN(6) == 0 {
				checks[0].CheckOnly = true
			}
			got := c.decideCall("", checks, []Choice{choice})
			want := model.DecideCall(got.Now, nil, checks, []Choice{choice})
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d, checks %+v:\nscript %+v\nmodel  %+v", step, checks, got, want)
			}
			now = got.Now
			side := "before"
			if now >= endUS {
				side = "after"
			}
			if r := got.Results[0]; r.ResetAfter > 0 && (now+r.ResetAfter.Microseconds() != endUS && side == "before") {
				t.Fatalf("step %d: reset after %v at %d, the end is %d", step, r.ResetAfter, now, endUS)
			}
			if got.Allowed() {
				seen["allowed "+side]++
				if !checks[0].CheckOnly {
					pending = append(pending, admission{key: checks[0].Key, limit: plain, at: now, reserved: checks[0].Cost})
				}
			} else {
				seen["denied "+side]++
			}
			if got.Picks[0] == PickOverride {
				seen["override"]++
			}
		}
		lastNow = now
		if now >= endUS+300000 && step > 40 {
			break
		}
		if now < endUS-300000 {
			time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
		}
	}
	t.Logf("seen %v", seen)
	for _, k := range []string{"allowed before", "denied before", "allowed after", "refunded across the end", "charged across the end", "override"} {
		if seen[k] == 0 {
			t.Errorf("never %s: %v", k, seen)
		}
	}
}

// The proxy's clock only picks the bounds sent: up to a period off, Redis's
// clock still finds its period among them; further off, the call fails
// rather than decide in a wrong period.
func TestCalendarScriptToleratesAPeriodOfSkew(t *testing.T) {
	c, p := dial(t), "cal-skew"
	l := mustLimit(t)(NewCalendar(5, Calendar{Unit: Hour, Zone: "UTC"}))
	defer func() { wallClock = time.Now }()
	for _, skew := range []time.Duration{-50 * time.Minute, 0, 50 * time.Minute, -3 * time.Hour, 3 * time.Hour} {
		wallClock = func() time.Time { return time.Now().Add(skew) }
		d, err := c.tryDecide("", []Check{{Key: p + "{k}:0", Limit: l, Cost: 1}})
		far := skew.Abs() > time.Hour
		if far != (err != nil) {
			t.Errorf("proxy clock %v off: %+v, %v", skew, d, err)
		}
		if err == nil {
			_, end, _ := l.Calendar.Bounds(time.UnixMicro(d.Now))
			if got := d.Now + d.Results[0].ResetAfter.Microseconds(); got != end.UnixMicro() {
				t.Errorf("proxy clock %v off: resets at %d, the hour ends at %d", skew, got, end.UnixMicro())
			}
		}
	}
}
