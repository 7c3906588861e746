package localstate

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
)

// checkTable fails unless t's heap, positions and index agree.
func checkTable(tb testing.TB, t *localTable) {
	tb.Helper()
	if len(t.heap) != len(t.entries) || len(t.index) != len(t.entries) || len(t.entries) > t.max {
		tb.Fatalf("heap %d, index %d, slots %d, max %d", len(t.heap), len(t.index), len(t.entries), t.max)
	}
	for j, i := range t.heap {
		if t.entries[i].pos != j || t.index[t.entries[i].key] != i {
			tb.Fatalf("heap[%d] = slot %d at pos %d, index %d", j, i, t.entries[i].pos, t.index[t.entries[i].key])
		}
		if j > 0 && t.less(j, (j-1)/2) {
			tb.Fatalf("heap[%d] ranks below its parent", j)
		}
	}
}

// Random adds, updates, victims and removals keep the table consistent;
// a victim is never pinned, never still denying, and never ranks above
// an unpinned state that could have gone instead.
func TestLocalTableInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tb := newLocalTable(16)
	now := int64(1000)
	for step := range 20000 {
		if rng.IntN(4) == 0 {
			tb.pin()
		}
		key := fmt.Sprint(rng.IntN(40))
		rank := int64(rng.IntN(1 << 20))
		if rng.IntN(3) == 0 {
			rank = rankDenying + now + int64(rng.IntN(50)) - 10
		}
		switch i, held := tb.index[key]; {
		case held && rng.IntN(5) == 0:
			tb.remove(i)
		case held:
			tb.update(i, rank, now+10)
		default:
			lowest := int64(-1)
			for _, st := range tb.entries {
				if st.serial != tb.serial && !deniesAt(st.rank, now) && (lowest < 0 || st.rank < lowest) {
					lowest = st.rank
				}
			}
			full := tb.len() == tb.max
			v, pushed, ok := tb.add(key, rank, now+10, now)
			switch {
			case !full && (pushed || !ok), full && pushed != (lowest >= 0), ok != (!full || pushed):
				t.Fatalf("step %d: full %v, pushed %v, held %v, lowest %d", step, full, pushed, ok, lowest)
			case pushed && (v.rank != lowest || v.serial == tb.serial):
				t.Fatalf("step %d: pushed out rank %d (serial %d), lowest unpinned %d", step, v.rank, v.serial, lowest)
			}
		}
		checkTable(t, tb)
		now += int64(rng.IntN(3))
	}
}

// BenchmarkLocalFlood is one local decision in a full table (max_keys
// 10,000), every request a new key: each pushes out the least used state.
// BenchmarkLocalHotKey is one key decided over and over.
func BenchmarkLocalFlood(b *testing.B)  { benchLocal(b, 1<<30) }
func BenchmarkLocalHotKey(b *testing.B) { benchLocal(b, 1) }

func benchLocal(b *testing.B, keys int) {
	const maxKeys = 10_000
	l := New(algorithms.NewModel(), maxKeys, nop{}, nop{}, nop{})
	lim, _ := algorithms.NewFunnel(1_000_000, 1_000_000, time.Second)
	names := make([]string, 20_000)
	for i := range names {
		names[i] = fmt.Sprintf("k{%d}", i)
	}
	now := int64(1_700_000_000_000_000)
	checks := []algorithms.Check{{Limit: lim, Cost: 1}}
	b.ReportAllocs()
	for i := range b.N {
		checks[0].Key = names[i%min(keys, len(names))]
		l.Decide(now+int64(i), checks)
	}
	if l.Len() > maxKeys {
		b.Fatalf("%d states", l.Len())
	}
}

// nop is a metric that counts nothing.
type nop struct{}

func (nop) Increment(uint64) {}
func (nop) Add(int64)        {}
