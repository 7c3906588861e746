//go:build soak

package e2e

// The soak test is outside `make test` (build tag soak); run it with
// `make soak`. SOAK_REQUESTS overrides the number of requests.

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// soakRules use all three algorithms, on keys spread over many users, with
// windows short enough that every key expires within two seconds of its
// last request.
const soakRules = `[
	{"name":"log","key":[{"source":"header","name":"x-user"}],
	 "limits":[{"algorithm":"sliding_log","limit":20,"window":"2s"}]},
	{"name":"counter","key":[{"source":"header","name":"x-user"},{"source":"path"}],
	 "limits":[{"algorithm":"sliding_counter","limit":30,"window":"1s"}]},
	{"name":"funnel","key":[{"source":"header","name":"x-user"}],
	 "limits":[{"algorithm":"funnel","capacity":5,"rate":10,"period":"1s"}]}]`

// soakSnapshot is what the soak measures at one point.
type soakSnapshot struct {
	label      string
	requests   int64
	vmMemory   []uint32
	pending    int64
	usedMemory int64
	dbsize     int64
}

func (s soakSnapshot) String() string {
	mib := make([]string, len(s.vmMemory))
	for i, m := range s.vmMemory {
		mib[i] = fmt.Sprintf("%.1f MiB", float64(m)/(1<<20))
	}
	return fmt.Sprintf("%-22s requests %8d  VM memory [%s]  pending %3d  Redis used_memory %6.1f MiB  DBSIZE %7d",
		s.label, s.requests, strings.Join(mib, ", "), s.pending, float64(s.usedMemory)/(1<<20), s.dbsize)
}

// TestSoak sends one million requests through the Higress build in the
// host (2 VMs) from 64 keep-alive clients, for 50,000 users (a quarter of
// the requests from 20 of them, well over their limits), and measures
// each VM's linear memory, the filter's pending-call gauge, and Redis's
// used_memory and DBSIZE before, during and after; then waits for every key
// to expire.
func TestSoak(t *testing.T) {
	total := int64(1_000_000)
	if v := os.Getenv("SOAK_REQUESTS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 100_000 {
			t.Fatalf("SOAK_REQUESTS=%q: want an integer >= 100000", v)
		}
		total = n
	}
	const clients, users, hotUsers, workers = 64, 50_000, 20, 2
	r := redistest.Start(t) // its own server, so DBSIZE counts only this test's keys
	config := fmt.Sprintf(`{"failure_mode":"deny","redis":{"cluster":"redis","timeout":"1s","key_prefix":"soak:"},"rules":%s}`, soakRules)
	h := startBuild(t, "higress", wasmhost.Config{Workers: workers}, config, r.Addr).h

	snap := func(label string, requests int64) soakSnapshot {
		s := soakSnapshot{label: label, requests: requests, vmMemory: h.MemoryPerVM()}
		s.pending, _ = h.Metric("ratelimit.redis.pending")
		s.usedMemory, s.dbsize = redisMemory(t, r)
		return s
	}
	var snaps []soakSnapshot
	snaps = append(snaps, snap("before", 0))

	var next, done, ok, limited atomic.Int64
	var failed problems
	var peakDB atomic.Int64
	checkpoints := map[int64]string{20_000: "after warm-up", total / 2: "half way"}
	var cpMu sync.Mutex
	client := &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
	stopSampling := make(chan struct{})
	go func() { // DBSIZE's peak, once a second
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				if n, err := r.Client.Int("DBSIZE"); err == nil && n > peakDB.Load() {
					peakDB.Store(n)
				}
			case <-stopSampling:
				return
			}
		}
	}()
	began := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 1))
			for next.Add(1) <= total {
				u := rng.IntN(users)
				if rng.IntN(4) == 0 {
					u = rng.IntN(hotUsers) // a few users well over their limits
				}
				req, _ := http.NewRequest("GET", fmt.Sprintf("%s/s/%d", h.URL(), u%8), nil)
				req.Header.Set("x-user", "user-"+strconv.Itoa(u))
				resp, err := client.Do(req)
				if err != nil {
					failed.add("transport error: %v", err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case 200:
					ok.Add(1)
				case 429:
					limited.Add(1)
				default:
					failed.add("status %d", resp.StatusCode)
				}
				n := done.Add(1)
				if label, hit := checkpoints[n]; hit {
					s := snap(label, n)
					cpMu.Lock()
					snaps = append(snaps, s)
					cpMu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(began)
	close(stopSampling)
	failed.check(t)
	snaps = append(snaps, snap("end of traffic", done.Load()))

	waitFor(t, "ratelimit.redis.pending back to 0", func() bool {
		n, _ := h.Metric("ratelimit.redis.pending")
		return n == 0
	})
	expiredIn := time.Now()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, n := redisMemory(t, r); n <= 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("keys still in Redis 60 s after the traffic stopped: some key has no TTL")
		}
	}
	snaps = append(snaps, snap(fmt.Sprintf("keys expired (+%.1fs)", time.Since(expiredIn).Seconds()), done.Load()))

	t.Logf("soak: %d requests (%d admitted, %d limited) from %d keep-alive clients over %d VMs in %v; Redis DBSIZE peaked at %d",
		done.Load(), ok.Load(), limited.Load(), clients, workers, elapsed.Round(time.Second), peakDB.Load())
	for _, s := range snaps {
		t.Log(s)
	}
	if done.Load() != total || ok.Load()+limited.Load() != total {
		t.Fatalf("%d of %d requests answered 200 or 429", ok.Load()+limited.Load(), total)
	}
	// A Wasm memory never shrinks, so it shows the guest's high-water mark.
	// Past the first half, each VM's memory must not grow by more than an
	// eighth: a leak proportional to traffic would roughly double it.
	var half, end soakSnapshot
	for _, s := range snaps {
		switch s.label {
		case "half way":
			half = s
		case "end of traffic":
			end = s
		}
	}
	for i := range end.vmMemory {
		if half.vmMemory != nil && end.vmMemory[i] > half.vmMemory[i]+half.vmMemory[i]/8 {
			t.Errorf("VM %d memory grew from %d to %d bytes over the second half", i, half.vmMemory[i], end.vmMemory[i])
		}
	}
}

// redisMemory returns Redis's used_memory and DBSIZE. It may run on any
// goroutine, so it reports errors with t.Error.
func redisMemory(t *testing.T, r *redistest.Server) (usedMemory, dbsize int64) {
	t.Helper()
	info, err := r.Client.Text("INFO", "memory")
	if err != nil {
		t.Error(err)
		return 0, -1
	}
	for _, line := range strings.Split(info, "\n") {
		if v, found := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); found {
			usedMemory, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if dbsize, err = r.Client.Int("DBSIZE"); err != nil {
		t.Error(err)
		return usedMemory, -1
	}
	return usedMemory, dbsize
}
