package e2e

// Exactness under concurrency: many clients, several VMs, one key. What the
// limiter admitted is read back from independent records (the upstream's
// log of arrivals; every script call and its reply, taken between the host
// and Redis by a redistest.Proxy; a replay of those calls through the Go
// model at the times Redis reported) and checked against the algorithm's
// definition. Every check holds at any speed: Redis's own clock orders and
// times the decisions, and the test-side clock is only used for bounds
// (a request was decided between its send and its arrival).

import (
	"container/heap"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is an upstream that records, for every request it receives, the
// wall-clock time of arrival (µs since the epoch, the clock Redis's TIME
// reads on this machine) by the request's "id" query parameter, and counts
// arrivals by the "u" parameter.
type recorder struct {
	*httptest.Server
	mu     sync.Mutex
	at     map[string]int64
	byUser map[string]int
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{at: map[string]int64{}, byUser: map[string]int{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		now := time.Now().UnixMicro()
		q := req.URL.Query()
		r.mu.Lock()
		if id := q.Get("id"); id != "" {
			r.at[id] = now
		}
		r.byUser[q.Get("u")]++
		r.mu.Unlock()
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) arrivals() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.at)
}

func (r *recorder) users() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.byUser)
}

// sent is one request as its client saw it.
type sent struct {
	id        string
	sentAt    int64 // wall clock, µs, just before the request was written
	arrivedAt int64 // wall clock, µs, when it reached the upstream (if it did)
	answered  time.Time
	status    int
}

// hammer sends GET url?id=<n> from clients goroutines over keep-alive
// connections until enough reports true (it is polled every few
// milliseconds), and returns every request with its outcome. enough counts
// events, such as decisions Redis made, so a slow machine only takes
// longer; waitGuard guards against a hang.
func hammer(t *testing.T, url string, clients int, enough func() bool) []sent {
	t.Helper()
	client := &http.Client{Timeout: waitGuard,
		Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer client.CloseIdleConnections()
	var seq atomic.Int64
	var mu sync.Mutex
	var all []sent
	var failed problems
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []sent
			defer func() { mu.Lock(); all = append(all, mine...); mu.Unlock() }()
			for {
				select {
				case <-stop:
					return
				default:
				}
				s := sent{id: strconv.FormatInt(seq.Add(1), 10), sentAt: time.Now().UnixMicro()}
				resp, err := client.Get(url + "?id=" + s.id)
				if err != nil {
					failed.add("transport error: %v", err)
					return
				}
				resp.Body.Close()
				s.answered, s.status = time.Now(), resp.StatusCode
				mine = append(mine, s)
			}
		}()
	}
	deadline := time.Now().Add(waitGuard)
	for !enough() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	failed.check(t)
	if !enough() {
		t.Fatalf("gave up after %v: the run never had enough (%d requests)", waitGuard, len(all))
	}
	return all
}

// exactTimeout is redis.timeout in exactness runs, and exactPauseGuard the
// host's pause guard: far above any call's time, so that no call times out
// however busy the machine (a timeout would be a 503 and fail the run).
const (
	exactTimeout    = "10s"
	exactPauseGuard = time.Minute
)

// exactConfig is a configuration for exactness runs: failure_mode deny, so
// that a failed Redis call shows as 503 and is never counted as admitted;
// no circuit breaker.
func exactConfig(prefix, rules string) string {
	return fmt.Sprintf(`{"failure_mode":"deny","circuit_breaker":{"failures":0},"redis":{"cluster":"redis","timeout":%q,"key_prefix":%q},"rules":%s}`,
		exactTimeout, prefix, rules)
}

// matchDecisions pairs each decision time with a distinct request whose
// [sentAt, arrivedAt] holds it, or says why none
// can. Sweeping the times in order and giving each to the open request
// that closes first finds such a pairing whenever one exists.
func matchDecisions(decisions []int64, reqs []sent) error {
	byStart := append([]sent(nil), reqs...)
	sort.Slice(byStart, func(i, j int) bool { return byStart[i].sentAt < byStart[j].sentAt })
	var open minHeap // arrival times of requests sent and not yet paired
	next := 0
	for _, d := range decisions {
		for next < len(byStart) && byStart[next].sentAt <= d {
			heap.Push(&open, byStart[next].arrivedAt)
			next++
		}
		for open.Len() > 0 && open[0] < d {
			return fmt.Errorf("a request reached the upstream at %d with no decision between its send and then", open[0])
		}
		if open.Len() == 0 {
			return fmt.Errorf("Redis logged an admission at %d that no request sent before it explains", d)
		}
		heap.Pop(&open)
	}
	if open.Len() > 0 || next < len(byStart) {
		return errors.New("more admitted requests than logged admissions")
	}
	return nil
}

// minHeap is a heap of int64, smallest first.
type minHeap []int64

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h minHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *minHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
