package e2e

// Exactness under concurrency: many clients, several VMs, one key. What the
// limiter admitted is read back from independent records (the upstream's
// log of arrivals, Redis's own log, a replay through the Go model) and
// checked against the algorithm's definition.

import (
	"bufio"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
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
	out := make(map[string]int64, len(r.at))
	for k, v := range r.at {
		out[k] = v
	}
	return out
}

func (r *recorder) users() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.byUser))
	for k, v := range r.byUser {
		out[k] = v
	}
	return out
}

// sent is one request as its client saw it.
type sent struct {
	id        string
	sentAt    int64 // wall clock, µs, just before the request was written
	arrivedAt int64 // wall clock, µs, when it reached the upstream (if it did)
	answered  time.Time
	status    int
}

// hammer sends GET path?id=<n> from clients goroutines over keep-alive
// connections until d has passed. Just before it tells the clients to
// stop, while all of them are still sending, it calls atDeadline. It
// returns every request with its outcome.
func hammer(t *testing.T, url string, clients int, d time.Duration, atDeadline func()) []sent {
	client := &http.Client{Timeout: 30 * time.Second,
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
	time.Sleep(d)
	atDeadline()
	close(stop)
	wg.Wait()
	failed.check(t)
	return all
}

// exactConfig is a configuration for exactness runs: failure_mode deny, so
// that a failed Redis call shows as 503 and is never counted as admitted;
// no circuit breaker; a timeout generous enough for a machine under -race.
func exactConfig(prefix, rules string) string {
	return fmt.Sprintf(`{"failure_mode":"deny","circuit_breaker":{"failures":0},"redis":{"cluster":"redis","timeout":"2s","key_prefix":%q},"rules":%s}`, prefix, rules)
}

// TestExactSlidingLog: 32 clients and 4 VMs hammer one key limited to
// L = 100 per W = 500 ms for 3.5 s.
//
// Two independent records are checked. (1) Redis's log: the sorted set's
// members are the admission times on Redis's clock; snapshots taken every
// 40 ms (an entry stays at least W in the set) collect all of them, and
// they must number exactly the admitted requests. Sorted, any L+1
// consecutive admissions must span at least W: no window of length W, at
// any position, holds more than L. Every full window after the first,
// counted from the first admission while demand lasted, must hold at least
// 99% of L. (2) The upstream's record alone: request i was decided at some
// d_i between its send time s_i and its arrival a_i at the upstream, on the
// same wall clock (Redis and this process share the machine). If any L+1
// decisions span at least W, then for any L+1 admitted requests the latest
// arrival comes at least W after the earliest send: a_max >= s_min + W.
// The check runs over every such set (for each request as the latest
// arrival, against the L earlier arrivals with the latest sends), so the
// tolerance is each request's own send-to-arrival time. Finally the Redis
// times are matched one to one to the requests, each d inside its
// request's [s, a], which ties the two records together.
func TestExactSlidingLog(t *testing.T) {
	const limit, window, clients, runFor = 100, 500 * time.Millisecond, 32, 3500 * time.Millisecond
	prefix := redistest.Prefix(t)
	rec := newRecorder(t)
	h := startHostWith(t, wasmhost.Config{Module: module, Workers: 4, Upstream: rec.URL,
		RedisClusters: map[string]string{"redis": server.Addr},
		PluginConfig: []byte(exactConfig(prefix, `[{"name":"hot","key":[{"source":"constant","value":"all"}],
			"limits":[{"algorithm":"sliding_log","limit":100,"window":"500ms"}]}]`))})
	logKey := prefix + "{hot|all}:0"

	log := snapshotLog(t, logKey, 40*time.Millisecond)
	var demandEnd int64 // Redis clock, µs, while every client still sends
	all := hammer(t, h.URL()+"/hot", clients, runFor, func() {
		tm, err := server.Client.Time(context.Background()).Result()
		if err != nil {
			t.Error(err)
		}
		demandEnd = tm.UnixMicro()
	})
	decisions, maxGap := log.stop()

	arrivals := rec.arrivals()
	var admitted []sent
	denied := 0
	for _, s := range all {
		switch s.status {
		case 200:
			admitted = append(admitted, s)
		case 429:
			denied++
		default:
			t.Fatalf("request %s: status %d (503 means a Redis call failed)", s.id, s.status)
		}
	}
	allowedMetric, _ := h.Metric("ratelimit.rule.hot.allowed")
	if len(admitted) != len(arrivals) || len(admitted) != len(decisions) || int64(len(admitted)) != allowedMetric {
		t.Fatalf("admitted: %d answered 200, %d reached the upstream, %d in Redis's log (snapshots up to %v apart), metric %d",
			len(admitted), len(arrivals), len(decisions), maxGap, allowedMetric)
	}
	if denied == 0 {
		t.Fatal("demand never exceeded the limit")
	}

	// (1) Redis's log: every window of length W holds at most L.
	w := window.Microseconds()
	for i := limit; i < len(decisions); i++ {
		if decisions[i]-decisions[i-limit] < w {
			t.Fatalf("%d admissions within %dµs (window %dµs)", limit+1, decisions[i]-decisions[i-limit], w)
		}
	}
	// Full windows after the first, while demand lasted: at least 99% of L.
	full := 0
	var counts []int
	for start := decisions[0] + w; start+w <= demandEnd; start += w {
		lo := sort.Search(len(decisions), func(i int) bool { return decisions[i] >= start })
		hi := sort.Search(len(decisions), func(i int) bool { return decisions[i] >= start+w })
		counts = append(counts, hi-lo)
		if n := hi - lo; n*100 < 99*limit {
			t.Fatalf("window %d admitted %d, under 99%% of %d", full+1, n, limit)
		}
		full++
	}
	if full < 3 {
		t.Fatalf("only %d full windows", full)
	}

	// (2) The upstream's record: any L+1 admitted requests arrive at least
	// W after the earliest of them was sent.
	for i := range admitted {
		admitted[i].arrivedAt = arrivals[admitted[i].id]
	}
	sort.Slice(admitted, func(i, j int) bool { return admitted[i].arrivedAt < admitted[j].arrivedAt })
	var latest minHeap // the L largest send times among earlier arrivals
	var maxSpread int64
	for _, s := range admitted {
		a := s.arrivedAt
		maxSpread = max(maxSpread, a-s.sentAt)
		if latest.Len() == limit {
			if earliest := min(s.sentAt, latest[0]); a < earliest+w {
				t.Fatalf("%d admitted requests sent from %d reached the upstream by %d: less than W apart", limit+1, earliest, a)
			}
		}
		heap.Push(&latest, s.sentAt)
		if latest.Len() > limit {
			heap.Pop(&latest)
		}
	}
	// Tie the records: a distinct Redis time inside each request's [s, a].
	if err := matchDecisions(decisions, admitted); err != nil {
		t.Fatal(err)
	}
	t.Logf("sliding log: %d requests (%d admitted, %d denied) from %d clients over 4 VMs; %d sliding windows verified on Redis's clock; full windows after the first admitted %v (L = %d); upstream record checked with per-request tolerance up to %dµs",
		len(all), len(admitted), denied, clients, len(decisions), counts, limit, maxSpread)
}

// logSnapshots collects the members of a sorted-set log, and their scores,
// from periodic ZRANGE snapshots.
type logSnapshots struct {
	mu     sync.Mutex
	seen   map[string]int64
	last   time.Time
	maxGap time.Duration
	done   chan struct{}
	wg     sync.WaitGroup
	take   func()
}

func snapshotLog(t *testing.T, key string, every time.Duration) *logSnapshots {
	s := &logSnapshots{seen: map[string]int64{}, done: make(chan struct{})}
	s.take = func() {
		zs, err := server.Client.ZRangeWithScores(context.Background(), key, 0, -1).Result()
		if err != nil {
			t.Error(err)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, z := range zs {
			s.seen[z.Member.(string)] = int64(z.Score)
		}
		if now := time.Now(); !s.last.IsZero() {
			s.maxGap = max(s.maxGap, now.Sub(s.last))
		}
		s.last = time.Now()
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			s.take()
			select {
			case <-tick.C:
			case <-s.done:
				return
			}
		}
	}()
	return s
}

// stop takes a last snapshot and returns the sorted admission times.
func (s *logSnapshots) stop() ([]int64, time.Duration) {
	close(s.done)
	s.wg.Wait()
	s.take()
	out := make([]int64, 0, len(s.seen))
	for _, score := range s.seen {
		out = append(out, score)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, s.maxGap
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

// funnelCall is one script call and its reply.
type funnelCall struct {
	cost     int64
	decision algorithms.Decision
}

// TestExactFunnelModel runs the script itself from 16 connections at once
// against one funnel and one token bucket sharing each call, with costs 0
// to 3, then replays every call through algorithms.Model at the time Redis
// reported, in that order, and demands identical decisions. Redis runs
// scripts one at a time and each reads TIME, so the times order the calls
// as Redis executed them; a script takes well over a microsecond, so no two
// calls share a time, which is asserted.
func TestExactFunnelModel(t *testing.T) {
	const conns, runFor = 16, 1500 * time.Millisecond
	prefix := redistest.Prefix(t)
	funnel, err := algorithms.NewFunnel(10, 100, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	bucket, err := algorithms.TokenBucket(30, 400, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tag := prefix + "{fun|x}"
	blocks := []string{tag + ":block"}
	checksFor := func(cost int64) []algorithms.Check {
		return []algorithms.Check{{Key: tag + ":0", Limit: funnel, Cost: cost}, {Key: tag + ":1", Limit: bucket, Cost: cost}}
	}

	var mu sync.Mutex
	var calls []funnelCall
	var failed problems
	deadline := time.Now().Add(runFor)
	var wg sync.WaitGroup
	for g := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := dialRaw(server.Addr)
			if err != nil {
				failed.add("dial: %v", err)
				return
			}
			defer c.Close()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			var mine []funnelCall
			for time.Now().Before(deadline) {
				cost := rng.Int64N(4)
				d, err := c.decide(blocks, checksFor(cost))
				if err != nil {
					failed.add("call: %v", err)
					return
				}
				mine = append(mine, funnelCall{cost: cost, decision: d})
			}
			mu.Lock()
			calls = append(calls, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	failed.check(t)

	sort.Slice(calls, func(i, j int) bool { return calls[i].decision.Now < calls[j].decision.Now })
	m := algorithms.NewModel()
	allowed := 0
	for i, c := range calls {
		if i > 0 && c.decision.Now <= calls[i-1].decision.Now {
			t.Fatalf("calls %d and %d share Redis time %d: their order is unknown", i-1, i, c.decision.Now)
		}
		want := m.Decide(c.decision.Now, []int64{-2}, checksFor(c.cost))
		if !reflect.DeepEqual(c.decision, want) {
			t.Fatalf("call %d at %d, cost %d:\nscript %+v\nmodel  %+v", i, c.decision.Now, c.cost, c.decision, want)
		}
		if c.decision.Allowed() {
			allowed++
		}
	}
	if allowed == 0 || allowed == len(calls) {
		t.Fatalf("%d of %d calls allowed: the run did not exercise both outcomes", allowed, len(calls))
	}
	t.Logf("funnel + token bucket: %d concurrent script calls from %d connections replayed through the model, all identical (%d allowed, %d denied)",
		len(calls), conns, allowed, len(calls)-allowed)
}

// rawConn speaks RESP to Redis directly: the bytes the filter sends.
type rawConn struct {
	net.Conn
	r   *bufio.Reader
	buf []byte
}

func dialRaw(addr string) (*rawConn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &rawConn{Conn: c, r: bufio.NewReader(c)}, nil
}

// roundTrip sends cmd and returns the reply, which aliases c's buffer.
func (c *rawConn) roundTrip(cmd []byte) (redisproto.Value, error) {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(cmd); err != nil {
		return redisproto.Value{}, err
	}
	c.buf = c.buf[:0]
	chunk := make([]byte, 4096)
	for {
		n, err := c.r.Read(chunk)
		c.buf = append(c.buf, chunk[:n]...)
		if len(c.buf) > 0 {
			v, used, derr := redisproto.Decode(c.buf)
			if derr == nil && used != len(c.buf) {
				return v, fmt.Errorf("%d bytes after the reply", len(c.buf)-used)
			}
			if !errors.Is(derr, redisproto.ErrIncomplete) {
				return v, derr
			}
		}
		if err != nil {
			return redisproto.Value{}, err
		}
	}
}

// decide runs the script as the filter does: EVALSHA, then EVAL on
// -NOSCRIPT.
func (c *rawConn) decide(blocks []string, checks []algorithms.Check) (algorithms.Decision, error) {
	var d algorithms.Decision
	v, err := c.roundTrip(algorithms.AppendEvalSHA(nil, blocks, checks))
	if err != nil {
		return d, err
	}
	var rerr *redisproto.Error
	if errors.As(v.Err(), &rerr) && rerr.Prefix() == "NOSCRIPT" {
		if v, err = c.roundTrip(algorithms.AppendEval(nil, blocks, checks)); err != nil {
			return d, err
		}
	}
	err = d.Parse(v, len(blocks), len(checks))
	return d, err
}

// TestFunnelThroughHostWithinBound: 32 clients and 4 VMs pour into one
// funnel of capacity 20 draining 100/s. GCRA admits at most capacity +
// elapsed / T requests (T = 10 ms), elapsed being the span of the
// decisions, which lies within first send to last answer.
func TestFunnelThroughHostWithinBound(t *testing.T) {
	const capacity, interval, clients, runFor = 20, 10 * time.Millisecond, 32, 2 * time.Second
	prefix := redistest.Prefix(t)
	rec := newRecorder(t)
	h := startHostWith(t, wasmhost.Config{Module: module, Workers: 4, Upstream: rec.URL,
		RedisClusters: map[string]string{"redis": server.Addr},
		PluginConfig: []byte(exactConfig(prefix, `[{"name":"pour","key":[{"source":"constant","value":"all"}],
			"limits":[{"algorithm":"funnel","capacity":20,"rate":100,"period":"1s"}]}]`))})
	began := time.Now()
	all := hammer(t, h.URL()+"/pour", clients, runFor, func() {})
	var last time.Time
	admitted := 0
	for _, s := range all {
		if s.status != 200 && s.status != 429 {
			t.Fatalf("status %d", s.status)
		}
		if s.status == 200 {
			admitted++
		}
		if s.answered.After(last) {
			last = s.answered
		}
	}
	elapsed := last.Sub(began)
	bound := capacity + int(elapsed/interval)
	if len(rec.arrivals()) != admitted {
		t.Fatalf("%d answered 200, %d reached the upstream", admitted, len(rec.arrivals()))
	}
	if admitted > bound || admitted < capacity {
		t.Fatalf("funnel admitted %d in %v; the model allows %d to %d", admitted, elapsed, capacity, bound)
	}
	t.Logf("funnel via host: %d requests, %d admitted in %v; model bound %d (capacity %d + %v / %v)",
		len(all), admitted, elapsed.Round(time.Millisecond), bound, capacity, elapsed.Round(time.Millisecond), interval)
}

// TestRulesChargeOnlyWhenAllAdmit: rule "user" (5 per user) and rule
// "global" (30 for all) match every request and share one call. A request
// either rule denies charges neither: first the per-user rule binds (4
// users send 12 each: 20 admitted, and the global log holds exactly those
// 20), then the global rule binds (10 new users send 5 each, within their
// own limit, and only the global rule's last 10 are admitted: each user's
// log holds exactly what that user had admitted).
func TestRulesChargeOnlyWhenAllAdmit(t *testing.T) {
	prefix := redistest.Prefix(t)
	rec := newRecorder(t)
	h := startHostWith(t, wasmhost.Config{Module: module, Workers: 4, Upstream: rec.URL,
		RedisClusters: map[string]string{"redis": server.Addr},
		PluginConfig: []byte(exactConfig(prefix, `[
			{"name":"user","key":[{"source":"query","name":"u"}],"limits":[{"algorithm":"sliding_log","limit":5,"window":"1m"}]},
			{"name":"global","key":[{"source":"constant","value":"all"}],"limits":[{"algorithm":"sliding_log","limit":30,"window":"1m"}]}]`))})
	zcard := func(tag string) int {
		n, err := server.Client.ZCard(context.Background(), prefix+"{"+tag+"}:0").Result()
		if err != nil {
			t.Fatal(err)
		}
		return int(n)
	}
	// burst sends each user's requests, all users at once, and returns the
	// deniers named in the 429 bodies.
	burst := func(users []string, each int) map[string]int {
		var mu sync.Mutex
		deniedBy := map[string]int{}
		var failed problems
		var wg sync.WaitGroup
		for _, u := range users {
			for range each {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, err := http.Get(h.URL() + "/multi?u=" + u)
					if err != nil {
						failed.add("%v", err)
						return
					}
					defer resp.Body.Close()
					var body strings.Builder
					bufio.NewReader(resp.Body).WriteTo(&body)
					switch resp.StatusCode {
					case 200:
					case 429:
						rule := "?"
						if _, after, ok := strings.Cut(body.String(), `"rule":"`); ok {
							rule, _, _ = strings.Cut(after, `"`)
						}
						mu.Lock()
						deniedBy[rule]++
						mu.Unlock()
					default:
						failed.add("status %d: %s", resp.StatusCode, body.String())
					}
				}()
			}
		}
		wg.Wait()
		failed.check(t)
		return deniedBy
	}
	names := func(p string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("%s%d", p, i))
		}
		return out
	}

	// The per-user rule binds.
	a := names("a", 4)
	if d := burst(a, 12); d["user"] != 4*7 || len(d) != 1 {
		t.Fatalf("phase 1 denials by rule: %v; want user: 28", d)
	}
	for _, u := range a {
		if got, logged := rec.users()[u], zcard("user|"+u); got != 5 || logged != 5 {
			t.Fatalf("user %s: %d admitted, %d in its log; want 5, 5", u, got, logged)
		}
	}
	if g := zcard("global|all"); g != 20 {
		t.Fatalf("global log holds %d after 20 admitted: a request the user rule denied charged it", g)
	}

	// The global rule binds.
	b := names("b", 10)
	if d := burst(b, 5); d["global"] != 40 || len(d) != 1 {
		t.Fatalf("phase 2 denials by rule: %v; want global: 40", d)
	}
	total := 0
	for _, u := range b {
		got, logged := rec.users()[u], zcard("user|"+u)
		if got != logged {
			t.Fatalf("user %s: %d admitted but %d in its log: a request the global rule denied charged it", u, got, logged)
		}
		total += got
	}
	if g := zcard("global|all"); total != 10 || g != 30 {
		t.Fatalf("phase 2: %d admitted, global log %d; want 10, 30", total, g)
	}
	t.Logf("several rules: %d requests; user rule binding: 20 admitted, global charged 20; global rule binding: 10 admitted, users charged 10", 4*12+10*5)
}
