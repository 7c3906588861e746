package algorithms

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// Leases go through the real script and the Model, beside plain limits
// and with their unspent units settled back: every Decision and
// Settlement must agree exactly, and every grant must be the most the
// limits admitted, up to the lease's most.
func TestScriptMatchesModelWithLeases(t *testing.T) {
	rng, c, p, prefix := newProperty(t, 14)
	mixes := propertyMixes(t)
	delete(mixes, "concurrency")
	names := []string{"sliding_log", "sliding_counter", "funnel", "token_bucket", "mixed"}
	plain := mustLimit(t)(NewSlidingLog(30, 50*time.Millisecond))
	seen := map[string]int{}
	var pending []admission
	for step := 0; step < 4000; step++ {
		mix := names[rng.IntN(len(names))]
		limits := mixes[mix]
		base := fmt.Sprintf("%s{%s}", prefix, mix)
		tier := Tier{Name: "default"}
		var keys []string
		for i, l := range limits {
			if l.Algorithm == Concurrency && rng.IntN(2) == 0 {
				continue // a lease with a slot takes its cost alone
			}
			tier.Limits = append(tier.Limits, l)
			keys = append(keys, fmt.Sprintf("%s:%d", base, i))
		}
		choice := Choice{Keys: keys, Tiers: []Tier{tier}, Cost: 1 + rng.Int64N(2), Slot: int64(step + 1)}
		choice.Lease = choice.Cost + rng.Int64N(6)
		var checks []Check
		if rng.IntN(3) == 0 {
			checks = []Check{{Key: base + ":9", Limit: plain, Cost: 1 + rng.Int64N(2)}}
		}
		got := c.decideCall("", checks, []Choice{choice})
		want := p.DecideCall(got.Now, nil, checks, []Choice{choice})
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d, choice %+v, checks %+v:\nscript %+v\nmodel  %+v", step, choice, checks, got, want)
		}
		granted := got.Granted[0]
		switch {
		case !got.Allowed():
			seen["denied"]++
			if granted != 0 {
				t.Fatalf("step %d: a denied call's lease took %d", step, granted)
			}
		case granted == choice.Lease:
			seen["whole lease"]++
		case granted == choice.Cost:
			seen["least"]++
		default:
			seen["part"]++
		}
		if got.Allowed() && granted < choice.Lease && !leaseFull(got, len(checks), tier.Limits) {
			t.Fatalf("step %d: took %d of %d with room left: %+v", step, granted, choice.Lease, got)
		}
		for i, l := range tier.Limits {
			if got.Allowed() && l.Algorithm == Concurrency {
				pending = append(pending, admission{key: keys[i], limit: l, at: got.Now, reserved: choice.Slot})
			} else if got.Allowed() && rng.IntN(3) == 0 {
				pending = append(pending, admission{key: keys[i], limit: l, at: got.Now, reserved: granted})
			}
		}
		if len(pending) > 0 && rng.IntN(4) == 0 {
			pending = settleUnspent(t, rng, c, p, pending, seen)
		}
		if rng.IntN(4) == 0 {
			time.Sleep(time.Duration(rng.IntN(5000)) * time.Microsecond)
		}
		if step >= 300 && seen["denied"] > 0 && seen["whole lease"] > 0 && seen["least"] > 0 && seen["part"] > 0 && seen["returned"] > 0 {
			break
		}
	}
	for _, k := range []string{"denied", "whole lease", "least", "part", "returned"} {
		if seen[k] == 0 {
			t.Errorf("no lease %s: %v", k, seen)
		}
	}
}

// leaseFull reports whether some limit of a lease (its results follow the
// plain checks') has nothing left, or is a concurrency limit.
func leaseFull(d Decision, plain int, limits []Limit) bool {
	for i, l := range limits {
		if l.Algorithm == Concurrency || d.Results[plain+i].Remaining == 0 {
			return true
		}
	}
	return false
}

// settleUnspent returns what some leases did not spend, as the filter
// does when a lease ends, and releases their slots.
func settleUnspent(t *testing.T, rng *rand.Rand, c *conn, model *Model, pending []admission, seen map[string]int) []admission {
	t.Helper()
	n := 1 + rng.IntN(len(pending))
	var settles []Settle
	for _, a := range pending[:n] {
		if a.limit.Algorithm == Concurrency {
			settles = append(settles, Release(a.key, a.limit, a.reserved))
			continue
		}
		settles = append(settles, Settle{Key: a.key, Limit: a.limit, At: a.at, Reserved: a.reserved, Cost: rng.Int64N(a.reserved + 1)})
	}
	got := c.settle(settles)
	want := model.Settle(got.Now, settles)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("settles %+v:\nscript %+v\nmodel  %+v", settles, got, want)
	}
	for _, r := range got.Results {
		if r.Applied < 0 {
			seen["returned"]++
		}
	}
	return pending[n:]
}
