package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// Throttles end to end: a burst at a throttled funnel, through the wasm
// host on real HTTP and a real Redis. Each admitted request reaches the
// upstream no earlier than the funnel admits it, on Redis's clock; what
// would wait beyond max_delay is denied; Redis's record holds exactly the
// requests admitted.

const (
	throttleCapacity = 2
	throttleInterval = 50 * time.Millisecond // 20 a second
	throttleMaxDelay = 400 * time.Millisecond
	throttleBurst    = 40
)

func throttleConfig(prefix string) string {
	return fmt.Sprintf(`{"redis":{"cluster":"redis","key_prefix":%q},"headers":"draft10","rules":[{"name":"calm",
	"key":[{"source":"query","name":"k"}],
	"limits":[{"algorithm":"funnel","capacity":%d,"rate":20,"period":"1s"}],
	"throttle":{"max_delay":%q}}]}`, prefix, throttleCapacity, throttleMaxDelay.String())
}

// arrivals is an upstream that notes, on Redis's clock, when each request
// reaches it.
type arrivals struct {
	mu   sync.Mutex
	at   []int64
	errs []error
}

func (a *arrivals) serve(t *testing.T) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := server.Do("TIME")
		a.mu.Lock()
		defer a.mu.Unlock()
		if err != nil {
			a.errs = append(a.errs, err)
		} else {
			parts := v.([]any)
			s, _ := strconv.ParseInt(parts[0].(string), 10, 64)
			us, _ := strconv.ParseInt(parts[1].(string), 10, 64)
			a.at = append(a.at, s*1_000_000+us)
		}
		w.Header().Set("content-type", "text/plain")
		w.Write([]byte("upstream " + r.URL.Path))
	}))
	t.Cleanup(up.Close)
	return up
}

func TestThrottleReleasesNoEarlierThanRedisAdmits(t *testing.T) {
	for _, build := range moduleKinds {
		t.Run(build, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			var up arrivals
			w := startBuild(t, build, wasmhost.Config{Upstream: up.serve(t).URL}, throttleConfig(prefix), server.Addr)
			h := w.h
			// A first request, so that each VM has read the script before
			// the burst.
			if o := w.send(t, map[string]string{":path": "/?k=warm"}); o.status != 200 {
				t.Fatalf("warm-up: %d", o.status)
			}
			up.mu.Lock()
			up.at = nil
			up.mu.Unlock()

			t0 := redisNow(t)
			statuses := make([]int, throttleBurst)
			var wg sync.WaitGroup
			for i := range throttleBurst {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, err := http.Get(h.URL() + "/?k=burst")
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
					statuses[i] = resp.StatusCode
				}()
			}
			wg.Wait()

			admitted, denied := 0, 0
			for _, s := range statuses {
				switch s {
				case 200:
					admitted++
				case 429:
					denied++
				default:
					t.Fatalf("statuses %v", statuses)
				}
			}
			// max_delay holds 8 intervals beyond the capacity; a burst
			// spread over time fits a few more.
			if admitted < throttleCapacity+int(throttleMaxDelay/throttleInterval) || denied == 0 {
				t.Fatalf("admitted %d, denied %d of %d", admitted, denied, throttleBurst)
			}
			up.mu.Lock()
			at := slices.Clone(up.at)
			errs := up.errs
			up.mu.Unlock()
			if len(errs) > 0 || len(at) != admitted {
				t.Fatalf("upstream saw %d requests for %d admitted; errors %v", len(at), admitted, errs)
			}
			slices.Sort(at)
			// The funnel admits the k-th request (from 1) of a burst that
			// began at t0 no earlier than t0 + (k - capacity) intervals.
			step := throttleInterval.Microseconds()
			for k := throttleCapacity + 1; k <= len(at); k++ {
				if earliest := t0 + int64(k-throttleCapacity)*step; at[k-1] < earliest {
					t.Errorf("request %d reached the upstream %dus after the burst, before the funnel admits it (%dus)", k, at[k-1]-t0, earliest-t0)
				}
			}
			// Redis's record: the TAT is the first admission's time plus
			// one interval per admitted request, and that time lies between
			// the burst's start and the first arrival upstream.
			// The key lives until its TAT: a machine too slow to read it by
			// then (on Redis's clock) skips this record, never the checks above.
			v, err := server.Do("GET", prefix+"{calm|burst}:0")
			if err != nil {
				t.Fatal(err)
			}
			if s, ok := v.(string); ok {
				tat, _ := strconv.ParseInt(s, 10, 64)
				if first := tat - int64(admitted)*step; first < t0 || first > at[0] {
					t.Errorf("Redis's TAT %dus after the burst began is not %d intervals after a first admission in [0, %dus]", tat-t0, admitted, at[0]-t0)
				}
			} else if late := redisNow(t) - t0; late < int64(admitted)*step {
				t.Errorf("the funnel's key is gone %dus after the burst began, before its TAT (at least %dus): got %v", late, int64(admitted)*step, v)
			} else {
				t.Logf("the funnel's key expired before it was read, %dus after the burst began: Redis's record not checked", late)
			}
			if d := w.metric("ratelimit.throttle.delayed"); d < 1 || d >= int64(admitted) {
				t.Errorf("%d requests delayed of %d admitted", d, admitted)
			}
			waitFor(t, "no request held", func() bool { return w.metric("ratelimit.throttle.held") == 0 })
		})
	}
}

// A client that gives up while its request is held leaves nothing behind:
// the VM drops the stream, the tick slows again, and the key's next
// request is decided as ever. The charge stays, as for any admitted
// request whose client left.
func TestThrottleClientLeavingWhileHeld(t *testing.T) {
	prefix := redistest.Prefix(t)
	config := fmt.Sprintf(`{"redis":{"cluster":"redis","key_prefix":%q},"rules":[{"name":"calm",
	"key":[{"source":"query","name":"k"}],
	"limits":[{"algorithm":"funnel","capacity":1,"rate":1,"period":"2s"}],
	"throttle":{"max_delay":"5s"}}]}`, prefix)
	w := startBuild(t, "higress", wasmhost.Config{Workers: 1}, config, server.Addr)
	h := w.h
	t0 := redisNow(t)
	if o := w.send(t, map[string]string{":path": "/?k=a"}); o.status != 200 {
		t.Fatalf("first request: %d", o.status)
	}
	t1 := redisNow(t)
	client := &http.Client{Timeout: 300 * time.Millisecond}
	if resp, err := client.Get(h.URL() + "/?k=a"); err == nil {
		resp.Body.Close()
		t.Fatalf("second request answered %d at once; it should wait about 2s", resp.StatusCode)
	}
	if w.metric("ratelimit.throttle.delayed") != 1 {
		t.Fatalf("delayed %d", w.metric("ratelimit.throttle.delayed"))
	}
	waitFor(t, "the held stream dropped", func() bool { return w.metric("ratelimit.throttle.held") == 0 })
	// Its charge stays: the key's next request waits for the one after it.
	if o := w.send(t, map[string]string{":path": "/?k=b"}); o.status != 200 {
		t.Fatalf("another key: %d", o.status)
	}
	// Redis's record: two intervals of 2s from the first admission, which
	// Redis made between t0 and t1.
	v, err := server.Do("GET", prefix+"{calm|a}:0")
	if err != nil {
		t.Fatal(err)
	}
	tat, _ := strconv.ParseInt(v.(string), 10, 64)
	if first := tat - 4_000_000; first < t0 || first > t1 {
		t.Fatalf("the funnel's TAT is %dus after the first request began, not 4s after its admission: the held request's charge is gone", tat-t0)
	}
}
