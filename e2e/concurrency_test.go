package e2e

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// Concurrency limits (issue 14), end to end: requests in flight per key,
// proven against Redis's own record of every slot, through both modules
// and natively.

func slotsConfig(prefix string, limit int, maxDuration string) string {
	// A long timeout: the tests count slots exactly, and a call timed out
	// by a busy machine would be admitted by the failure mode, taking none.
	return fmt.Sprintf(`{"redis":{"cluster":"redis","key_prefix":%q,"timeout":"10s"},"circuit_breaker":{"failures":0},"rules":[{"name":"slots",`+
		`"key":[{"source":"constant","value":"all"}],"limits":[{"algorithm":"concurrency","limit":%d,"max_duration":%q}]}]}`,
		prefix, limit, maxDuration)
}

// slotsKey is the one concurrency key of slotsConfig.
func slotsKey(prefix string) string { return prefix + "{slots|all}:0" }

// slotUpstream counts the requests it serves at once. A request waits for
// x-hold-us microseconds, or until release(x-gate) when it names a gate;
// x-reset: 1 drops the connection after the first bytes of the body.
type slotUpstream struct {
	*httptest.Server
	inFlight, peak, served atomic.Int64
	mu                     sync.Mutex
	gates                  map[string]chan struct{}
}

// host is the host config of two VMs in front of u.
func (u *slotUpstream) host() wasmhost.Config {
	return wasmhost.Config{Upstream: u.URL, UpstreamTimeout: time.Minute} // held requests wait on the test, however busy the machine
}

func newSlotUpstream(t *testing.T) *slotUpstream {
	u := &slotUpstream{gates: map[string]chan struct{}{}}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(func() {
		u.mu.Lock()
		for name, ch := range u.gates {
			select {
			case <-ch: // released already
			default:
				close(ch)
			}
			delete(u.gates, name)
		}
		u.mu.Unlock()
		u.Close()
	})
	return u
}

func (u *slotUpstream) gate(name string) chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.gates[name] == nil {
		u.gates[name] = make(chan struct{})
	}
	return u.gates[name]
}

// release lets every request waiting at the gate name finish, and any
// that reaches it later (a slot is taken in Redis before its request
// reaches the upstream) pass: a gate opens once.
func (u *slotUpstream) release(name string) {
	ch := u.gate(name)
	close(ch)
}

func (u *slotUpstream) serve(w http.ResponseWriter, r *http.Request) {
	n := u.inFlight.Add(1)
	u.served.Add(1)
	for p := u.peak.Load(); n > p && !u.peak.CompareAndSwap(p, n); p = u.peak.Load() {
	}
	if us, _ := strconv.Atoi(r.Header.Get("x-hold-us")); us > 0 {
		time.Sleep(time.Duration(us) * time.Microsecond)
	}
	if name := r.Header.Get("x-gate"); name != "" {
		select {
		case <-u.gate(name):
		case <-r.Context().Done():
		}
	}
	if r.Header.Get("x-reset") == "1" {
		w.Header().Set("content-length", "100")
		io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		u.inFlight.Add(-1)
		panic(http.ErrAbortHandler) // the upstream resets mid-body
	}
	// Counted out before the body ends, so before the filter can see the
	// end and release the slot: the upstream never counts more than the
	// slots held.
	u.inFlight.Add(-1)
	io.WriteString(w, "ok")
}

// N clients, many more than the limit, on one key, with responses held a
// random while: never more than the limit in flight, by Redis's record and
// by the upstream's own count, and every slot released at the end.
func TestConcurrencyNeverAboveLimit(t *testing.T) {
	const clients, limit, perClient = 32, 5, 5
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			rec := newSlotRecord(slotsKey(prefix))
			proxy := redistest.StartProxy(t, server.Addr)
			proxy.SetObserve(rec.observe)
			up := newSlotUpstream(t)
			var admitted, denied int64
			if kind == "native" {
				admitted, denied = nativeConcurrency(t, slotsConfig(prefix, limit, "1m"), proxy.Addr, limit, 3*clients*perClient)
			} else {
				hosts := []*wasmhost.Host{startBuild(t, kind, up.host(), slotsConfig(prefix, limit, "1m"), proxy.Addr).h,
					startBuild(t, kind, up.host(), slotsConfig(prefix, limit, "1m"), proxy.Addr).h}
				admitted, denied = slotClients(t, hosts, clients, perClient)
				if peak := up.peak.Load(); peak > limit || up.served.Load() != admitted {
					t.Errorf("the upstream served %d requests, %d at once; %d were admitted, limit %d", up.served.Load(), peak, admitted, limit)
				}
			}
			waitFor(t, "every slot released", func() bool {
				a, r := rec.counts()
				n, _ := server.Do("ZCARD", slotsKey(prefix))
				return a == r && n == int64(0)
			})
			peak := rec.check(t, limit)
			if a, _ := rec.counts(); int64(a) != admitted || denied == 0 {
				t.Errorf("%d slots acquired in Redis for %d requests admitted; %d denied", a, admitted, denied)
			}
			t.Logf("%d admitted, %d denied, at most %d in flight by Redis's record", admitted, denied, peak)
			if kind != "native" {
				t.Logf("at most %d at once at the upstream", up.peak.Load())
			}
		})
	}
}

// slotClients runs clients, each sending requests in turn through the
// hosts until perClient were admitted, each held a random while at the
// upstream; a denied client tries again at once.
func slotClients(t *testing.T, hosts []*wasmhost.Host, clients, perClient int) (admitted, denied int64) {
	t.Helper()
	var ok, no atomic.Int64
	var bad problems
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, got := 0, 0; got < perClient; i++ {
				if i == 100*perClient {
					bad.add("client %d: %d of %d requests admitted after %d tries", c, got, perClient, i)
					return
				}
				req, _ := http.NewRequest("GET", hosts[(c+i)%len(hosts)].URL()+"/", nil)
				req.Header.Set("x-hold-us", strconv.Itoa(rand.IntN(4000)))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					bad.add("client %d: %v", c, err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case 200:
					ok.Add(1)
					got++
				case 429:
					no.Add(1)
				default:
					bad.add("client %d: status %d", c, resp.StatusCode)
				}
			}
		}()
	}
	wg.Wait()
	bad.check(t)
	return ok.Load(), no.Load()
}

// nativeConcurrency drives n requests through filter.Plugin, interleaved:
// at each step a new request arrives, or an open one ends (its response
// whole, or reset), at random, never more than the test's own count of
// open admitted requests allowed.
func nativeConcurrency(t *testing.T, config, redisAddr string, limit, n int) (admitted, denied int64) {
	t.Helper()
	nt := startNative(t, config, redisAddr).(*nativeTarget)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 14))
	var open []*openStream
	end := func(i int) {
		o := open[i]
		open = slices.Delete(open, i, i+1)
		o.respond(&filtertest.Response{Headers: map[string]string{":status": "200"}, Chunks: []string{"ok"}, Reset: rng.IntN(4) == 0})
	}
	for sent := 0; sent < n || len(open) > 0; {
		if sent == n || len(open) > 0 && rng.IntN(3) == 0 {
			end(rng.IntN(len(open)))
			continue
		}
		sent++
		o := newOpenStream(nt, [][2]string{{":method", "GET"}, {":path", "/"}, {":authority", "a"}})
		if !o.admitted {
			denied++
			o.done()
			continue
		}
		admitted++
		if open = append(open, o); len(open) > limit {
			t.Fatalf("%d requests admitted and open, limit %d", len(open), limit)
		}
	}
	if nt.plugin.LiveStreams() != 0 || nt.plugin.Pending() != 0 {
		t.Errorf("live streams %d, pending calls %d", nt.plugin.LiveStreams(), nt.plugin.Pending())
	}
	return admitted, denied
}
