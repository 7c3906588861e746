package algorithms

import (
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// The sliding counter weighs the previous window by the part of it still
// inside the last W: with prev units in it and e into the current window,
// a request of cost n is admitted when prev*(W-e)/W + cur + n <= L, and
// leaves floor((L*W - prev*(W-e) - cur*W) / W) - n. A fixed case: 100 per
// second, 80 spent in one window, then one request a quarter or three
// quarters into the next, when 60 or 20 of the 80 still count. The test
// waits on the local clock, then reads e from the script's own Now, and
// checks the exact remaining and the Model's whole Decision.
func TestSlidingCounterWeighsPreviousWindow(t *testing.T) {
	const limit, w, prev = 100, int64(1000), 80 // w in ms
	l := mustLimit(t)(NewSlidingCounter(limit, time.Duration(w)*time.Millisecond))
	for _, tc := range []struct {
		name     string
		fraction float64 // e/W at the probe
		cost     int64
		allowed  bool
	}{
		{"quarter/cost 1", 0.25, 1, true},    // 60 count: 39 left (prev*e/W would leave 79)
		{"quarter/cost 50", 0.25, 50, false}, // 60 + 50 > 100
		{"three quarters/cost 1", 0.75, 1, true},
		{"three quarters/cost 50", 0.75, 50, true}, // 20 + 50 <= 100: 30 left
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := dial(t)
			for attempt := 0; ; attempt++ {
				check := Check{Key: redistest.Prefix(t) + "{u}:" + strconv.Itoa(attempt), Limit: l}
				model := NewModel()
				check.Cost = prev
				fill := c.decide("", []Check{check})
				if want := model.Decide(fill.Now, nil, []Check{check}); !fill.Allowed() || !reflect.DeepEqual(fill, want) {
					t.Fatalf("filling %d: script %+v, model %+v", prev, fill, want)
				}
				idx := fill.Now / 1000 / w
				probeAt := time.UnixMicro(((idx+1)*w + int64(tc.fraction*float64(w))) * 1000)
				time.Sleep(time.Until(probeAt))
				check.Cost = tc.cost
				got := c.decide("", []Check{check})
				nowMS := got.Now / 1000
				if nowMS/w != idx+1 || nowMS%w > int64(tc.fraction*float64(w))+w/10 {
					if attempt == 4 {
						t.Fatalf("the probe missed its time 5 times: window %d (want %d), %d ms into it", nowMS/w, idx+1, nowMS%w)
					}
					continue // too late on a busy machine: again, on a new key
				}
				e := nowMS % w
				free := limit*w - prev*(w-e)
				wantRemaining := free/w - tc.cost
				if !tc.allowed {
					wantRemaining = free / w
				}
				r := got.Results[0]
				if r.Allowed != tc.allowed || r.Remaining != wantRemaining {
					t.Fatalf("cost %d at e=%d ms of %d, %d in the previous window: allowed %t, remaining %d; want %t, %d (%+v)",
						tc.cost, e, w, prev, r.Allowed, r.Remaining, tc.allowed, wantRemaining, r)
				}
				if want := model.Decide(got.Now, nil, []Check{check}); !reflect.DeepEqual(got, want) {
					t.Fatalf("cost %d at e=%d ms: script %+v, model %+v", tc.cost, e, got, want)
				}
				return
			}
		})
	}
}
