package algorithms

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// newProperty starts a property test: a random source from a fresh seed,
// logged so that a failure can be replayed (stream tells the tests apart),
// a conn to the test Redis, a new Model and the test's key prefix.
func newProperty(t *testing.T, stream uint64) (*rand.Rand, *conn, *Model, string) {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, stream)), dial(t), NewModel(), redistest.Prefix(t)
}

// Random sequences of costs go through the real script and through the
// Model at the time the script reported; every Decision must agree exactly.
func TestScriptMatchesModel(t *testing.T) {
	mixes := propertyMixes(t)
	for name, limits := range mixes {
		t.Run(name, func(t *testing.T) {
			rng, c, model, p := newProperty(t, 1)
			checks := make([]Check, len(limits))
			allowed, denied := 0, 0
			var slots slotIDs
			for step := range 400 {
				user := rng.IntN(2) // two users, so keys stay apart
				for i, l := range limits {
					checks[i] = Check{Key: fmt.Sprintf("%s{u%d}:%d", p, user, i), Limit: l, Cost: slots.cost(l, rng)}
					if (l.Algorithm == Funnel || l.Algorithm == Concurrency) && rng.IntN(10) == 0 {
						checks[i].Cost = 0 // peek
					}
				}
				// Half the calls carry no block key, as a rule with
				// manual_block off sends them.
				block, pttls := fmt.Sprintf("%s{u%d}:block", p, user), []int64{-2}
				if rng.IntN(2) == 0 {
					block, pttls = "", nil
				}
				got := c.decide(block, checks)
				want := model.Decide(got.Now, pttls, checks)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("step %d, checks %+v:\nscript %+v\nmodel  %+v", step, checks, got, want)
				}
				if got.Allowed() {
					allowed++
				} else {
					denied++
				}
				if rng.IntN(4) == 0 {
					time.Sleep(time.Duration(rng.IntN(8000)) * time.Microsecond)
				}
			}
			if allowed == 0 || denied == 0 {
				t.Fatalf("the sequence must exercise both verdicts: %d allowed, %d denied", allowed, denied)
			}
		})
	}
}

// propertyMixes are the limits the property tests run: each algorithm
// alone, and all of them in one call.
func propertyMixes(t *testing.T) map[string][]Limit {
	must := mustLimit(t)
	return map[string][]Limit{
		"sliding_log":     {must(NewSlidingLog(7, 40*time.Millisecond))},
		"sliding_counter": {must(NewSlidingCounter(9, 30*time.Millisecond))},
		"funnel":          {must(NewFunnel(5, 3, 20*time.Millisecond))},
		"token_bucket":    {must(TokenBucket(4, 1, 7*time.Millisecond))},
		"concurrency":     {must(NewConcurrency(3, 20*time.Millisecond))},
		"mixed": {
			must(NewSlidingLog(3, 15*time.Millisecond)),
			must(NewSlidingLog(8, 60*time.Millisecond)),
			must(NewSlidingCounter(6, 25*time.Millisecond)),
			must(NewFunnel(4, 2, 10*time.Millisecond)),
			must(NewConcurrency(2, 50*time.Millisecond)), // long enough to be released before it expires, on a busy machine
		},
	}
}

// slotIDs hands out the slot ids concurrency checks acquire, as the
// filter does: unique per request.
type slotIDs struct{ last int64 }

// cost is a random cost of 1 to 3 (at most l's burst), or for a
// concurrency limit the next slot id.
func (s *slotIDs) cost(l Limit, rng *rand.Rand) int64 {
	if l.Algorithm == Concurrency {
		s.last++
		return 1<<40 + s.last
	}
	return 1 + rng.Int64N(min(l.Burst, 3))
}
