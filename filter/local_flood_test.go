package filter

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// localBounded is a configuration under failure_mode: local with Redis
// given up on (the breaker stays open), at most maxKeys states, and rules.
func localBounded(maxKeys int, rules string) string {
	return strings.Replace(localConfig("1", `"circuit_breaker":{"failures":1,"backoff":"10m"},`, rules),
		`"share":1`, `"share":1,"max_keys":`+strconv.Itoa(maxKeys), 1)
}

// localLogOf is one rule keyed on x-user, costed by x-cost, with a sliding
// log of limit per minute.
func localLogOf(limit int) string {
	return fmt.Sprintf(`[{"name":"u","key":[{"source":"header","name":"x-user"}],"cost":{"header":"x-cost","default":1},
		"limits":[{"algorithm":"sliding_log","limit":%d,"window":"1m"}]}]`, limit)
}

// A client denied while the VM decides alone stays denied until its own
// state recovers, however many other keys come: a flood of max_keys + 6
// keys, each admitted once (states that still admit: they push each other
// out) or each spent (states that deny: the table is full of them, and a
// new key is decided without being held). The table never holds more than
// max_keys states.
func TestLocalFloodKeepsDenial(t *testing.T) {
	const maxKeys = 4
	for _, c := range []struct {
		name             string
		perKey           int // requests per flooding key, of the limit of 2
		evicted, unheld  uint64
		statesAfterFlood int
	}{
		{"flood admitted", 1, maxKeys + 6 - (maxKeys - 1), 0, maxKeys},
		{"flood spent", 2, 0, 2 * (maxKeys + 6 - (maxKeys - 1)), maxKeys},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newFakeHost(t, localBounded(maxKeys, localLogOf(2)))
			h.Clock = time.Unix(1_700_000_000, 0)
			h.Down = true
			t0 := h.Clock
			for i, want := range []int{200, 200, 429} {
				if o := h.send("x-user=a"); o.status != want {
					t.Fatalf("a's request %d: %+v", i, o)
				}
			}
			for k := range maxKeys + 6 {
				for range c.perKey {
					if o := h.send(fmt.Sprintf("x-user=f%d", k)); o.status != 200 {
						t.Fatalf("f%d: %+v", k, o)
					}
					if n := h.plugin.top().fallback.size(); n > maxKeys {
						t.Fatalf("%d states held, max_keys %d", n, maxKeys)
					}
				}
				h.Clock = h.Clock.Add(time.Second)
			}
			if o := h.send("x-user=a"); o.status != 429 || o.headers["retry-after"] != "50" {
				t.Fatalf("a after the flood: %+v, want denied until its window ends", o)
			}
			m := h.Counters
			if m["ratelimit.failure_mode.local_evicted"] != c.evicted || m["ratelimit.failure_mode.local_unheld"] != c.unheld ||
				h.plugin.top().fallback.size() != c.statesAfterFlood || m["ratelimit.failure_mode.local_states"] != uint64(c.statesAfterFlood) {
				t.Fatalf("evicted %d, unheld %d, states %d (gauge %d); want %d, %d, %d", m["ratelimit.failure_mode.local_evicted"],
					m["ratelimit.failure_mode.local_unheld"], h.plugin.top().fallback.size(), m["ratelimit.failure_mode.local_states"],
					c.evicted, c.unheld, c.statesAfterFlood)
			}
			h.Clock = t0.Add(time.Minute - time.Millisecond)
			if o := h.send("x-user=a"); o.status != 429 {
				t.Fatalf("a just before its window ends: %+v", o)
			}
			h.Clock = t0.Add(time.Minute)
			if o := h.send("x-user=a"); o.status != 200 {
				t.Fatalf("a once its window ended: %+v", o)
			}
		})
	}
}

// Property: a denial is never cut short by other keys. Random keys, costs
// and whole-second steps, under each algorithm: once a request for key K
// of cost c is denied with Retry-After r, every request for K of cost c or
// more before r has passed is denied too, and the table never holds more
// than max_keys states. It holds without a bound (the algorithms' own
// property) and with a bound of 4 states for 12 keys.
func TestLocalEvictionNeverShortensDenial(t *testing.T) {
	limits := map[string]string{
		"sliding_log":     `{"algorithm":"sliding_log","limit":4,"window":"10s"}`,
		"sliding_counter": `{"algorithm":"sliding_counter","limit":4,"window":"10s"}`,
		"funnel":          `{"algorithm":"funnel","capacity":4,"rate":2,"period":"10s"}`,
	}
	for _, alg := range []string{"sliding_log", "sliding_counter", "funnel"} {
		for _, maxKeys := range []int{1 << 20, 4} {
			t.Run(fmt.Sprintf("%s/max_keys=%d", alg, maxKeys), func(t *testing.T) {
				rules := `[{"name":"u","key":[{"source":"header","name":"x-user"}],"cost":{"header":"x-cost","default":1},
					"limits":[` + limits[alg] + `]}]`
				for seed := range uint64(8) {
					denialsHold(t, localBounded(maxKeys, rules), maxKeys, seed)
				}
			})
		}
	}
}

// denialsHold runs one random sequence for TestLocalEvictionNeverShortensDenial.
func denialsHold(t *testing.T, config string, maxKeys int, seed uint64) {
	t.Helper()
	h := newFakeHost(t, config)
	h.Clock = time.Unix(1_700_000_000, 0)
	h.Down = true
	rng := rand.New(rand.NewPCG(seed, 14))
	type denial struct {
		cost  int
		until time.Time
	}
	denied := map[int]denial{}
	for step := range 600 {
		k, cost := rng.IntN(12), 1+rng.IntN(3)
		if rng.IntN(3) == 0 {
			k = 0 // a hot key, denied often
		}
		o := h.send(fmt.Sprintf("x-user=k%d", k), fmt.Sprintf("x-cost=%d", cost))
		d, ok := denied[k]
		held := ok && h.Clock.Before(d.until) && cost >= d.cost
		switch {
		case o.status == 200 && held:
			t.Fatalf("seed %d step %d: k%d cost %d admitted at +%v, though denied cost %d until +%v",
				seed, step, k, cost, h.Clock.Sub(time.Unix(1_700_000_000, 0)), d.cost, d.until.Sub(time.Unix(1_700_000_000, 0)))
		case o.status == 429:
			secs, err := strconv.Atoi(o.headers["retry-after"])
			if err != nil {
				t.Fatalf("seed %d step %d: %+v", seed, step, o)
			}
			if until := h.Clock.Add(time.Duration(secs) * time.Second); !held || until.After(d.until) {
				denied[k] = denial{cost: cost, until: until}
			}
		case o.status != 200:
			t.Fatalf("seed %d step %d: %+v", seed, step, o)
		}
		if n := h.plugin.top().fallback.size(); n > maxKeys {
			t.Fatalf("seed %d step %d: %d states held, max_keys %d", seed, step, n, maxKeys)
		}
		if rng.IntN(2) == 0 {
			h.Clock = h.Clock.Add(time.Duration(rng.IntN(3)) * time.Second)
		}
		if rng.IntN(8) == 0 {
			h.plugin.OnTick()
		}
	}
}

// Requests that leave no state (a peek: a header cost of 0 with "min": 0)
// leave nothing in the VM's model either, however many keys they name:
// the model holds no more keys than the table's states.
func TestLocalPeeksLeaveNoState(t *testing.T) {
	rules := strings.Replace(localLogOf(4), `"default":1}`, `"default":1,"min":0}`, 1)
	h := newFakeHost(t, localBounded(4, rules))
	h.Clock = time.Now()
	h.Down = true
	for i := range 50 {
		if o := h.send("x-user=p"+strconv.Itoa(i), "x-cost=0"); o.status != 200 {
			t.Fatalf("peek %d: %+v", i, o)
		}
	}
	if n, states := h.plugin.top().fallback.model.Len(), h.plugin.top().fallback.size(); n != 0 || states != 0 {
		t.Fatalf("after 50 peeks: %d keys in the model, %d states; want 0, 0", n, states)
	}
	for _, u := range []string{"a", "b", "c", "d", "e", "f"} {
		h.send("x-user="+u, "x-cost=1")
	}
	if n, states := h.plugin.top().fallback.model.Len(), h.plugin.top().fallback.size(); n != states || states != 4 {
		t.Fatalf("after 6 keys charged: %d keys in the model, %d states; want 4, 4", n, states)
	}
}
