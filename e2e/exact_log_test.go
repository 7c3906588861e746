package e2e

import (
	"container/heap"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// TestExactSlidingLog: 32 clients and 4 VMs hammer one key limited to
// L = 100 per W = 500 ms, until Redis has admitted 4L requests (so its
// decisions span at least three windows) and denied some.
//
// A proxy between the host and Redis records every script call and its
// reply: each decision and the Redis time it was made at. (1) Replayed
// through algorithms.Model in Redis's order, at Redis's times, every
// decision is the model's. The definition, checked on the same record
// without the model: no window of length W holds more than L admissions,
// and every denial found exactly L admissions in the W before it; the
// sorted set ends holding exactly the admissions of the last W. (2) The
// upstream's record alone: request i was decided at some d_i between its
// send time s_i and its arrival a_i at the upstream, on the same wall clock
// (Redis and this process share the machine). If any L+1 decisions span at
// least W, then for any L+1 admitted requests the latest arrival comes at
// least W after the earliest send: a_max >= s_min + W. The check runs over
// every such set (for each request as the latest arrival, against the L
// earlier arrivals with the latest sends), so the tolerance is each
// request's own send-to-arrival time. Finally the admissions Redis made
// are matched one to one to the requests that reached the upstream, each
// inside its request's [s, a], which ties the two records together. Every
// count agrees: 200s, arrivals, admissions in Redis's record, the metric.
func TestExactSlidingLog(t *testing.T) {
	const limit, window, clients = 100, 500 * time.Millisecond, 32
	prefix := redistest.Prefix(t)
	rec := newRecorder(t)
	h, calls := startRecorded(t, prefix, rec.URL, `[{"name":"hot","key":[{"source":"constant","value":"all"}],"limits":[{"algorithm":"sliding_log","limit":100,"window":"500ms"}]}]`)
	logKey := prefix + "{hot|all}:0"

	all := hammer(t, h.URL()+"/hot", clients, func() bool {
		return calls.admitted.Load() >= 4*limit && calls.denied.Load() >= 4
	})
	decided := calls.decisions(t)
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

	// (1) Redis's record, replayed through the model.
	l, err := algorithms.NewSlidingLog(limit, window)
	if err != nil {
		t.Fatal(err)
	}
	admissions := replay(t, decided, map[string]algorithms.Limit{logKey: l})
	allowedMetric, _ := h.Metric("ratelimit.rule.hot.allowed")
	if len(admitted) != len(arrivals) || len(admitted) != len(admissions) || int64(len(admitted)) != allowedMetric {
		t.Fatalf("admitted: %d answered 200, %d reached the upstream, %d in Redis's record, metric %d",
			len(admitted), len(arrivals), len(admissions), allowedMetric)
	}
	// The definition, on Redis's clock: at most L in any window of length
	// W, and exactly L in the window of each denial.
	w := window.Microseconds()
	for i := limit; i < len(admissions); i++ {
		if admissions[i]-admissions[i-limit] < w {
			t.Fatalf("%d admissions within %dµs (window %dµs)", limit+1, admissions[i]-admissions[i-limit], w)
		}
	}
	redisDenials := 0
	for _, c := range decided {
		if d := c.decision.Now; !c.decision.Allowed() {
			redisDenials++
			lo := sort.Search(len(admissions), func(i int) bool { return admissions[i] > d-w })
			hi := sort.Search(len(admissions), func(i int) bool { return admissions[i] >= d })
			if hi-lo != limit {
				t.Fatalf("a denial at %d found %d admissions in the window before it, not %d", d, hi-lo, limit)
			}
		}
	}
	// The log ends holding the admissions within W of the last call.
	last := decided[len(decided)-1].decision.Now
	want := admissions[sort.Search(len(admissions), func(i int) bool { return admissions[i] > last-w }):]
	if got := logScores(t, logKey); !slices.Equal(got, want) {
		t.Fatalf("the log holds %d entries %v, want the %d admissions after %d: %v", len(got), got, len(want), last-w, want)
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
	if err := matchDecisions(admissions, admitted); err != nil {
		t.Fatal(err)
	}
	t.Logf("sliding log: %d requests (%d admitted, %d denied, %d of those by Redis) from %d clients over 4 VMs; %d decisions replayed through the model on Redis's clock over %v; upstream record checked with per-request tolerance up to %dµs",
		len(all), len(admitted), denied, redisDenials, clients, len(decided),
		time.Duration(last-decided[0].decision.Now)*time.Microsecond, maxSpread)
}

// logScores returns the scores of a sorted-set log, in order.
func logScores(t *testing.T, key string) []int64 {
	t.Helper()
	reply, err := server.Client.Strings("ZRANGE", key, 0, -1, "WITHSCORES")
	if err != nil {
		t.Fatal(err)
	}
	var scores []int64
	for i := 1; i < len(reply); i += 2 {
		f, err := strconv.ParseFloat(reply[i], 64)
		if err != nil {
			t.Fatalf("score %q: %v", reply[i], err)
		}
		scores = append(scores, int64(f))
	}
	return scores
}
