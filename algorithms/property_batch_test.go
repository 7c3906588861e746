package algorithms

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// A JSON-RPC batch is one decide call over many keys: 1 to 64 distinct
// keys, each with 1 to 3 limits, costs 0 to 600. Script and Model must
// agree exactly, call by call, as for a single request.
func TestScriptMatchesModelBatch(t *testing.T) {
	rng, c, model, p := newProperty(t, 7)
	must := mustLimit(t)
	kinds := []Limit{
		must(NewSlidingLog(1500, 40*time.Millisecond)),
		must(NewSlidingCounter(2000, 30*time.Millisecond)),
		must(NewFunnel(1200, 600, 10*time.Millisecond)),
		must(TokenBucket(900, 300, 5*time.Millisecond)),
		must(NewSlidingLog(600, 25*time.Millisecond)),
	}
	// A pool of keys, each with its own limits, so the batches of later
	// steps meet the state earlier ones left.
	const pool = 96
	limits := make([][]Limit, pool)
	for k := range limits {
		for range 1 + rng.IntN(3) {
			limits[k] = append(limits[k], kinds[rng.IntN(len(kinds))])
		}
	}
	allowed, denied, most := 0, 0, 0
	var checks []Check
	for step := range 300 {
		checks = checks[:0]
		keys := 1 + rng.IntN(64)
		if step%4 == 0 {
			keys = 1 + rng.IntN(4) // small batches pass more often
		}
		for _, k := range rng.Perm(pool)[:keys] {
			for i, l := range limits[k] {
				cost := rng.Int64N(601)
				if rng.IntN(8) == 0 {
					cost = 0
				}
				checks = append(checks, Check{Key: fmt.Sprintf("%s{k%d}:%d", p, k, i), Limit: l, Cost: cost})
			}
		}
		most = max(most, len(checks))
		got := c.decide("", checks)
		want := model.Decide(got.Now, nil, checks)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d, %d checks %+v:\nscript %+v\nmodel  %+v", step, len(checks), checks, got, want)
		}
		if got.Allowed() {
			allowed++
		} else {
			denied++
		}
		if rng.IntN(3) == 0 {
			time.Sleep(time.Duration(rng.IntN(10000)) * time.Microsecond)
		}
	}
	if allowed == 0 || denied == 0 {
		t.Fatalf("the batches must exercise both verdicts: %d allowed, %d denied", allowed, denied)
	}
	t.Logf("%d allowed, %d denied, up to %d checks in one call", allowed, denied, most)
}

// Two positions of one call on the same key are each checked against the
// state as it was before the call, then each committed: on the key's last
// unit both pass. This is why the filter merges a batch's equal keys,
// summing their costs, before the call: merged, the same request is
// denied.
func TestDecideDuplicateKeyOverAdmits(t *testing.T) {
	must := mustLimit(t)
	for _, l := range []Limit{
		must(NewSlidingLog(5, time.Hour)),
		must(NewSlidingCounter(5, time.Hour)),
		must(TokenBucket(5, 1, time.Hour)),
	} {
		t.Run(l.Algorithm.String(), func(t *testing.T) {
			c, p := dial(t), redistest.Prefix(t)
			split, merged := p+"{split}:0", p+"{merged}:0"
			for _, key := range []string{split, merged} {
				if d := c.decide("", []Check{{Key: key, Limit: l, Cost: 4}}); !d.Allowed() {
					t.Fatalf("the first 4 units of %s: %+v", key, d)
				}
			}
			// One unit left on each key; the request wants two.
			d := c.decide("", []Check{{Key: split, Limit: l, Cost: 1}, {Key: split, Limit: l, Cost: 1}})
			if !d.Allowed() || d.Results[0].Remaining != 0 || d.Results[1].Remaining != 0 {
				t.Fatalf("two positions on one key: want both to pass on its last unit, got %+v", d)
			}
			if d := c.decide("", []Check{{Key: merged, Limit: l, Cost: 2}}); d.Allowed() {
				t.Fatalf("the same units merged into one position: want denied, got %+v", d)
			}
		})
	}
}
