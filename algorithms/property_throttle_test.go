package algorithms

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// Throttled choices go through the real script and the Model, alone, two
// in one call and beside plain limits: every Decision must agree exactly.
// Then each funnel's admissions, taken at their release times (Now +
// Delay), must conform to the funnel as arrivals, a plain funnel's beside
// a throttle included: a throttle never lets a request through before its
// time.
func TestScriptMatchesModelWithThrottles(t *testing.T) {
	rng, c, p, prefix := newProperty(t, 15)
	must := mustLimit(t)
	mixes := map[string][]Limit{
		"funnel":         {must(NewFunnel(5, 3, 20*time.Millisecond))},
		"token_bucket":   {must(TokenBucket(4, 1, 7*time.Millisecond))},
		"two funnels":    {must(NewFunnel(3, 1, 5*time.Millisecond)), must(NewFunnel(8, 4, 40*time.Millisecond))},
		"funnel and log": {must(NewFunnel(4, 2, 10*time.Millisecond)), must(NewSlidingLog(12, 60*time.Millisecond))},
	}
	names := []string{"funnel", "token_bucket", "two funnels", "funnel and log"}
	plain := []Limit{must(NewSlidingLog(40, 50*time.Millisecond)), must(NewFunnel(1, 1, 10*time.Millisecond))}
	released := map[string][]release{}
	seen := map[string]int{}
	for step := 0; step < 3000; step++ {
		var choices []Choice
		for n := 1 + rng.IntN(2); len(choices) < n; {
			m := rng.IntN(len(names))
			mix := names[m]
			base := fmt.Sprintf("%s{%s}", prefix, "t")
			choice := Choice{Tiers: []Tier{{Name: "default", Limits: mixes[mix]}}, Cost: 1 + rng.Int64N(2),
				Throttle: time.Duration(1+rng.IntN(40)) * time.Millisecond}
			for i := range mixes[mix] {
				choice.Keys = append(choice.Keys, fmt.Sprintf("%s:%d", base, 100*m+i))
			}
			if len(choices) == 1 && choices[0].Keys[0] == choice.Keys[0] {
				continue // one call decides each key once
			}
			choices = append(choices, choice)
		}
		var checks []Check
		if rng.IntN(3) == 0 {
			p := rng.IntN(len(plain))
			checks = []Check{{Key: fmt.Sprintf("%s{t}:9%d", prefix, p), Limit: plain[p], Cost: 1}}
		}
		got := c.decideCall("", checks, choices)
		want := p.DecideCall(got.Now, nil, checks, choices)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d, choices %+v, checks %+v:\nscript %+v\nmodel  %+v", step, choices, checks, got, want)
		}
		switch {
		case !got.Allowed():
			seen["denied"]++
		case got.Delay == 0:
			seen["at once"]++
		case got.Delay > minThrottle(choices):
			seen["held by another throttle"]++
		default:
			seen["held"]++
		}
		if got.Allowed() {
			for _, c := range checks { // a plain funnel goes on with the request
				if c.Limit.Algorithm == Funnel {
					released[c.Key] = append(released[c.Key], release{at: got.Now + got.Delay.Microseconds(), cost: c.Cost, limit: c.Limit})
				}
			}
			for _, ch := range choices {
				for i, l := range ch.Tiers[0].Limits {
					if l.Algorithm == Funnel {
						released[ch.Keys[i]] = append(released[ch.Keys[i]], release{at: got.Now + got.Delay.Microseconds(), cost: ch.Cost, limit: l})
					}
				}
			}
		}
		if rng.IntN(6) == 0 {
			time.Sleep(time.Duration(rng.IntN(20000)) * time.Microsecond)
		}
		if step >= 300 && seen["denied"] > 0 && seen["at once"] > 0 && seen["held"] > 0 && seen["held by another throttle"] > 0 {
			break
		}
	}
	for _, k := range []string{"denied", "at once", "held", "held by another throttle"} {
		if seen[k] == 0 {
			t.Errorf("no call %s: %v", k, seen)
		}
	}
	for key, rs := range released {
		if err := conforms(rs); err != nil {
			t.Errorf("%s: %v", key, err)
		}
	}
}

type release struct {
	at, cost int64
	limit    Limit
}

func minThrottle(choices []Choice) time.Duration {
	m := choices[0].Throttle
	for _, c := range choices {
		m = min(m, c.Throttle)
	}
	return m
}

// conforms checks releases against their funnel as arrivals: the units
// released in any span of time, times the emission interval, never exceed
// the funnel's tolerance plus the span. (A request held by another
// throttle may be released after later ones: the funnel charged it as of
// its release, and GCRA bounds every span whatever the order of charges.)
func conforms(rs []release) error {
	burst, t := rs[0].limit.args()
	slices.SortStableFunc(rs, func(a, b release) int { return cmp.Compare(a.at, b.at) })
	for i := range rs {
		sum := int64(0)
		for j := i; j < len(rs); j++ {
			sum += rs[j].cost
			if sum*t > burst*t+rs[j].at-rs[i].at {
				return fmt.Errorf("releases %d..%d: %d units in %dus, over a funnel of %d per %dus", i, j, sum, rs[j].at-rs[i].at, burst, t)
			}
		}
	}
	return nil
}

// A choice with both a lease and a throttle is refused before anything is
// charged: the lease's re-check would decide now what the throttle decided
// later (found by a review: the script failed after a partial charge).
func TestThrottleWithLeaseRefusedBeforeCharging(t *testing.T) {
	c := dial(t)
	must := mustLimit(t)
	prefix := fmt.Sprintf("throttlelease%d", time.Now().UnixNano()%1000000)
	slow := must(NewFunnel(1, 2, time.Second))
	wide := must(NewFunnel(10, 10, time.Second))
	a, b := prefix+"{t}:1", prefix+"{t}:2"
	c.decide("", []Check{{Key: a, Limit: slow, Cost: 1}})  // a full for 500ms
	c.decide("", []Check{{Key: b, Limit: wide, Cost: 10}}) // b full for 1s
	before := c.do("GET", a).String()
	choices := []Choice{
		{Keys: []string{a}, Cost: 1, Throttle: time.Second, Tiers: []Tier{{Name: "d", Limits: []Limit{slow}}}},
		{Keys: []string{b}, Cost: 1, Lease: 5, Throttle: time.Second, Tiers: []Tier{{Name: "d", Limits: []Limit{wide}}}},
	}
	raw, err := c.send(AppendCall(nil, RESP, FCall, OpDecide, nil, nil, choices))
	if err != nil {
		t.Fatal(err)
	}
	if after := c.do("GET", a).String(); !strings.Contains(string(raw), "bad throttle") || after != before {
		t.Fatalf("reply %q; a's TAT %s, then %s", raw, before, after)
	}
}

// A held call takes no lease batch: a lease's re-check at the larger cost
// decides now, and would charge its funnel as of now, not as of the
// release (found by a review). The lease takes its cost, as of the release.
func TestThrottleHeldCallTakesNoLeaseBatch(t *testing.T) {
	c := dial(t)
	must := mustLimit(t)
	prefix := fmt.Sprintf("throttleheldlease%d", time.Now().UnixNano()%1000000)
	slow := must(NewFunnel(1, 1, 100*time.Millisecond)) // throttled: one per 100ms
	wide := must(NewFunnel(10, 1, 10*time.Millisecond)) // the lease's: 10 per 100ms
	th, ls := prefix+"{t}:1", prefix+"{t}:2"
	c.decide("", []Check{{Key: th, Limit: slow, Cost: 1}}) // th full for 100ms
	m := NewModel()
	m.tats[th] = redisInt(c, th)
	choices := []Choice{
		{Keys: []string{th}, Cost: 1, Throttle: time.Second, Tiers: []Tier{{Name: "d", Limits: []Limit{slow}}}},
		{Keys: []string{ls}, Cost: 1, Lease: 5, Tiers: []Tier{{Name: "d", Limits: []Limit{wide}}}},
	}
	got := c.decideCall("", nil, choices)
	if want := m.DecideCall(got.Now, nil, nil, choices); !reflect.DeepEqual(got, want) {
		t.Fatalf("script %+v\nmodel  %+v", got, want)
	}
	tat := redisInt(c, ls)
	release := got.Now + got.Delay.Microseconds()
	if got.Delay <= 0 || got.Granted[1] != 1 || tat != release+10_000 {
		t.Fatalf("delay %v, granted %v, the lease's funnel TAT %dus after the release (want 10000)", got.Delay, got.Granted, tat-release)
	}
}

// redisInt reads an integer string key.
func redisInt(c *conn, key string) int64 {
	s, _ := c.do("GET", key).Text()
	var n int64
	fmt.Sscan(s, &n)
	return n
}
