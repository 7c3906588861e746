package algorithms

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// admission is a limit's share of an admitted request, awaiting its settle.
type admission struct {
	key      string
	limit    Limit
	at       int64
	reserved int64
}

// settleCases counts what a random sequence exercised.
type settleCases map[string]int

// cover reports whether every case of want occurred.
func (c settleCases) cover(want []string) bool {
	for _, k := range want {
		if c[k] == 0 {
			return false
		}
	}
	return true
}

// Random sequences mixing reservations, check-only and peek checks,
// settles (charges, refunds, overdraws far past capacity, fail-open ones
// with nothing reserved, records aged out) and several limits per call go
// through the real script and the Model at Redis's time; every Decision
// and Settlement must agree exactly.
func TestScriptMatchesModelWithSettles(t *testing.T) {
	mixes := propertyMixes(t)
	for name, limits := range mixes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rng, c, model, p := newProperty(t, 2)
			cases := settleCases{}
			var pending []admission
			var slots slotIDs
			// Long enough for every record to age out (a counter's takes
			// two windows).
			var ageOut time.Duration
			for _, l := range limits {
				if l.Algorithm == SlidingCounter {
					ageOut = max(ageOut, 2*l.Period)
				}
				ageOut = max(ageOut, l.Period)
			}
			want := []string{"admitted", "denied", "check-only admitted", "check-only denied", "peek"}
			concurrent, settled := false, false
			for _, l := range limits {
				concurrent = concurrent || l.Algorithm == Concurrency
				settled = settled || l.Algorithm != Concurrency
			}
			if settled {
				want = append(want, "charge", "refund", "refund all", "overdraw", "nothing reserved", "aged out", "denied in debt")
			}
			if concurrent {
				want = append(want, "release", "release expired")
			}
			if len(limits) > 1 {
				want = append(want, "check-only among others")
			}
			// 400 steps, and more, up to 4,000, until every case occurred:
			// a random sequence may take long to meet a rare one.
			steps := 0
			for step := 0; step < 400 || step < 4000 && !cases.cover(want); step++ {
				steps = step + 1
				// Right after a long sleep, settle what has aged out; for a
				// quarter of the time, nothing, so that limits fill up
				// (concurrency slots are freed only by settles).
				hold := step%40 >= 20 && step%40 < 30
				if len(pending) > 0 && !hold && (rng.IntN(3) == 0 || step%40 == 0) {
					pending = settleStep(t, rng, c, model, pending, cases, step%40 == 0)
				} else {
					pending = decideStep(t, rng, c, model, p, limits, pending, cases, &slots)
				}
				switch {
				case step%40 == 39:
					time.Sleep(ageOut + time.Millisecond)
				case rng.IntN(4) == 0:
					time.Sleep(time.Duration(rng.IntN(8000)) * time.Microsecond)
				}
			}
			t.Logf("cases after %d steps: %v", steps, cases)
			for _, k := range want {
				if cases[k] == 0 {
					t.Errorf("the sequence never exercised %q: %v", k, cases)
				}
			}
		})
	}
}

// decideStep decides one request of random checks and records its
// admissions.
func decideStep(t *testing.T, rng *rand.Rand, c *conn, model *Model, p string, limits []Limit, pending []admission, cases settleCases, slots *slotIDs) []admission {
	t.Helper()
	user := rng.IntN(2)
	checks := make([]Check, len(limits))
	checkOnly := 0
	for i, l := range limits {
		checks[i] = Check{Key: fmt.Sprintf("%s{u%d}:%d", p, user, i), Limit: l, Cost: slots.cost(l, rng)}
		switch rng.IntN(10) {
		case 0:
			checks[i].Cost = 0
			cases["peek"]++
		case 1, 2:
			checks[i].CheckOnly, checks[i].Cost = true, rng.Int64N(5) // the cost is ignored
			checkOnly++
		}
	}
	got := c.decide("", checks)
	inDebt := false // a peek denies only beyond capacity
	for _, ch := range checks {
		inDebt = inDebt || !model.check(ch, got.Now, 0).ok
	}
	want := model.Decide(got.Now, nil, checks)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("checks %+v:\nscript %+v\nmodel  %+v", checks, got, want)
	}
	if !got.Allowed() {
		cases["denied"]++
		if checkOnly > 0 {
			cases["check-only denied"]++
		}
		if inDebt {
			cases["denied in debt"]++
		}
		// A fail-open admission: nothing reserved, settled all the same
		// (nothing acquired, nothing released).
		if rng.IntN(8) == 0 {
			for _, ch := range checks {
				if ch.Limit.Algorithm == Concurrency {
					continue
				}
				pending = append(pending, admission{key: ch.Key, limit: ch.Limit, at: got.Now})
			}
		}
		return pending
	}
	cases["admitted"]++
	if checkOnly > 0 {
		cases["check-only admitted"]++
		if checkOnly < len(checks) {
			cases["check-only among others"]++
		}
	}
	for _, ch := range checks {
		reserved := ch.Cost
		if ch.CheckOnly {
			reserved = 0
		}
		if ch.Limit.Algorithm == Concurrency && reserved == 0 {
			continue // no slot acquired, none to release
		}
		pending = append(pending, admission{key: ch.Key, limit: ch.Limit, at: got.Now, reserved: reserved})
	}
	return pending
}

// settleStep settles up to three pending admissions at random, with real
// costs above, below or far above what they reserved; aged, right after a
// long sleep, it takes first the oldest that reserved something.
func settleStep(t *testing.T, rng *rand.Rand, c *conn, model *Model, pending []admission, cases settleCases, aged bool) []admission {
	t.Helper()
	var settles []Settle
	for range 1 + rng.IntN(3) {
		if len(pending) == 0 {
			break
		}
		i := rng.IntN(len(pending))
		if aged {
			aged = false
			for j := range pending {
				if pending[j].reserved > 0 {
					i = j
					break
				}
			}
		}
		a := pending[i]
		pending = append(pending[:i], pending[i+1:]...)
		s := Settle{Key: a.key, Limit: a.limit, At: a.at, Reserved: a.reserved}
		switch r := rng.IntN(20); {
		case a.limit.Algorithm == Concurrency:
			s = Release(a.key, a.limit, a.reserved)
		case r == 0:
			s.Cost = s.Reserved + a.limit.Burst*(1+rng.Int64N(3)) // far beyond capacity
		case r < 7:
			s.Cost = s.Reserved + 1 + rng.Int64N(3)
		case r < 10:
			s.Cost = 0
		case r < 17 && s.Reserved > 1:
			s.Cost = 1 + rng.Int64N(s.Reserved-1) // part of it
		default:
			s.Cost = s.Reserved
		}
		if err := s.Limit.CheckSettleCost(s.Cost); err != nil {
			t.Fatal(err)
		}
		settles = append(settles, s)
	}
	got := c.settle(settles)
	want := model.Settle(got.Now, settles)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("settles %+v:\nscript %+v\nmodel  %+v", settles, got, want)
	}
	for i, s := range settles {
		r := got.Results[i]
		switch {
		case s.Limit.Algorithm == Concurrency && r.Applied == -1:
			cases["release"]++
			continue
		case s.Limit.Algorithm == Concurrency:
			cases["release expired"]++
			continue
		case s.Reserved == 0:
			cases["nothing reserved"]++
		case r.Applied > 0:
			cases["charge"]++
		case r.Applied < 0 && s.Cost == 0:
			cases["refund all"]++
		case r.Applied < 0:
			cases["refund"]++
		}
		if r.Remaining < 0 {
			cases["overdraw"]++
		}
		// The record no longer counts (a counter's may, one window on).
		if gone := s.Limit.Period.Microseconds(); s.Reserved > 0 && (got.Now-s.At >= 2*gone ||
			s.Limit.Algorithm != SlidingCounter && got.Now-s.At >= gone) {
			cases["aged out"]++
		}
	}
	return pending
}
