package e2e

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// slotRecord is Redis's own record of one concurrency key: every script
// call a proxy in front of Redis relayed, with the Redis time its reply
// carries. A slot is held from the call that acquired it to the call that
// released it, on Redis's clock.
type slotRecord struct {
	key      string
	mu       sync.Mutex
	acquired map[string]int64 // slot id -> Redis time (us)
	released map[string]int64
	denials  []int64 // Redis times of the calls that found no slot free
	// freedNothing counts releases that found their slot gone; twice
	// counts slots released twice, unknown releases of slots never
	// acquired.
	freedNothing, twice, unknown int
}

func newSlotRecord(key string) *slotRecord {
	return &slotRecord{key: key, acquired: map[string]int64{}, released: map[string]int64{}}
}

// observe reads one relayed command and its reply (redistest.Proxy).
func (r *slotRecord) observe(args []string, reply []byte) {
	if len(args) < 4 || !isScriptCall(args) {
		return
	}
	nk, _ := strconv.Atoi(args[2])
	if len(args) < 3+nk+1 {
		return
	}
	keys, argv := args[3:3+nk], args[3+nk:]
	v, _, err := redisproto.Decode(reply)
	if err != nil || v.Err() != nil {
		return // -NOSCRIPT: nothing ran
	}
	var ints []int64
	for _, e := range v.Elems {
		n, _ := e.Int64()
		ints = append(ints, n)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch argv[0] {
	case "e", "g":
	case "s": // settles: six values each; a release's slot is its fifth
		for i, k := range keys {
			if j := 1 + 6*i; k == r.key && argv[j] == "k" {
				r.noteRelease(argv[j+4], ints[0], ints[1+2*i])
			}
		}
	default: // a decision: four values per limit, after nb
		nb, _ := strconv.Atoi(argv[0])
		if len(ints) < 2 || ints[1] != -2 {
			return // blocked
		}
		allowed := true
		for i := 2; i+4 < len(ints); i += 5 {
			allowed = allowed && ints[i] == 1
		}
		for i, k := range keys[nb:] {
			if j := 1 + 4*i; k == r.key && argv[j] == "k" && argv[j+3] != "0" && argv[j+3] != "-1" {
				if allowed {
					r.acquired[argv[j+3]] = ints[0]
				} else {
					r.denials = append(r.denials, ints[0])
				}
			}
		}
	}
}

func (r *slotRecord) noteRelease(slot string, now, applied int64) {
	_, known := r.acquired[slot]
	_, again := r.released[slot]
	switch {
	case applied == 0:
		r.freedNothing++
	case !known:
		r.unknown++
	case again:
		r.twice++
	default:
		r.released[slot] = now
	}
}

// span returns, on Redis's clock, when the first and the last of the
// slots acquired so far expire, each held at most d.
func (r *slotRecord) span(d time.Duration) (first, last int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	first = math.MaxInt64
	for _, at := range r.acquired {
		first, last = min(first, at+d.Microseconds()), max(last, at+d.Microseconds())
	}
	return first, last
}

// String lists the record, for a failure's message.
func (r *slotRecord) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("Redis's record of %s (times in us): acquired %v, released %v, denied at %v; releases that freed nothing %d",
		r.key, r.acquired, r.released, r.denials, r.freedNothing)
}

// counts returns the slots acquired and released so far.
func (r *slotRecord) counts() (acquired, released int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.acquired), len(r.released)
}

// check proves the record: every slot acquired was released exactly once,
// never more than limit were held at once, and each denial came when
// exactly limit were held. It returns the peak.
func (r *slotRecord) check(t *testing.T, limit int) int {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	type event struct {
		at    int64
		delta int
	}
	var events []event
	for slot, at := range r.acquired {
		events = append(events, event{at, +1})
		if rel, ok := r.released[slot]; ok {
			events = append(events, event{rel, -1})
		} else {
			t.Errorf("slot %s acquired at %d was never released", slot, at)
		}
	}
	if r.twice > 0 || r.unknown > 0 {
		t.Errorf("%d slots released twice, %d releases of slots never acquired", r.twice, r.unknown)
	}
	// Redis runs one script at a time, each at its own microsecond: at a
	// tie the acquisition counts first, which can only raise the peak.
	slices.SortFunc(events, func(a, b event) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return b.delta - a.delta
	})
	held, peak := 0, 0
	heldAt := func(at int64) int { // slots held just before at
		n := 0
		for _, e := range events {
			if e.at >= at {
				break
			}
			n += e.delta
		}
		return n
	}
	for _, e := range events {
		held += e.delta
		peak = max(peak, held)
	}
	if peak > limit {
		t.Errorf("%d slots held at once by Redis's record, limit %d", peak, limit)
	}
	for _, d := range r.denials {
		if n := heldAt(d); n != limit {
			t.Errorf("a request denied at %d when %d slots were held, limit %d", d, n, limit)
		}
	}
	return peak
}
