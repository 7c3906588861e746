package algorithms

import (
	"strconv"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// The library's peek is flagged no-writes (Redis refuses it any write,
// and runs it with FCALL_RO and on a full Redis): where a check trims the
// entries that left the window, a peek counts around them. It answers as
// the decide's check does, and leaves the key as it was.
func TestPeekCountsAroundStaleEntries(t *testing.T) {
	c := dial(t)
	p := redistest.Prefix(t)
	const window, slot = 60_000_000, 10_000_000 // us
	for _, tc := range []struct {
		name      string
		algorithm string
		a, b      int64
		members   func(now int64) []string // ZADD's score-member pairs
	}{
		{"sliding_log", "l", 3, window, func(now int64) []string {
			return pairs(now-2*window, "a", now-window-5, "b", now-window, "c", now-3000, "d", now-2000, "e", now-1000, "f")
		}},
		{"weighted sliding_log", "l", 3, window, func(now int64) []string {
			return pairs(-7, "s", now-2*window, "a:2", now-window, "b:2", now-3000, "c:2", now-1000, "d")
		}},
		{"concurrency", "k", 2, slot, func(now int64) []string {
			return pairs(now-2000, "1", now-1000, "2", now+slot-3000, "3", now+slot-1000, "4")
		}},
	} {
		key := p + "{" + tc.name + "}:0"
		now := redisNow(t, c)
		c.do(append([]string{"ZADD", key}, tc.members(now)...)...)
		before := c.do("DUMP", key).String()
		args := []string{"1", key, "0", tc.algorithm, itoa(tc.a), itoa(tc.b), "-1"}
		peeked := c.do(append([]string{"FCALL_RO", function(OpPeek)}, args...)...)
		if after := c.do("DUMP", key).String(); peeked.Err() != nil || after != before {
			t.Fatalf("%s: peek answered %v; the key changed: %v", tc.name, peeked, after != before)
		}
		checked := c.do(append([]string{"FCALL", function(OpDecide)}, args...)...)
		pk, ck := ints(t, peeked), ints(t, checked)
		// {now, -2, allowed, limit, remaining, retry, reset}: retry and
		// reset are times after now, the same instants in both.
		if pk[2] != 0 || pk[2] != ck[2] || pk[3] != ck[3] || pk[4] != ck[4] || pk[0]+pk[5] != ck[0]+ck[5] || pk[0]+pk[6] != ck[0]+ck[6] {
			t.Errorf("%s: peek %v, the decide's check %v; want a denial, the same as of now", tc.name, pk, ck)
		}
	}
}

// A peek of a settle only reads what remains: one that charges, refunds
// or releases is refused.
func TestPeekRefusesASettleThatChanges(t *testing.T) {
	c := dial(t)
	key := redistest.Prefix(t) + "{u}:0"
	for name, args := range map[string][]string{
		"charge":  {"s", "f", "5", "1000", "1", "0", "1"},
		"refund":  {"s", "l", "5", "1000", "1", "2", "0"},
		"release": {"s", "k", "5", "1000", "1", "0", "0"},
	} {
		v := c.do(append([]string{"FCALL_RO", function(OpPeek), "1", key}, args...)...)
		if v.Err() == nil {
			t.Errorf("a peek's settle, a %s: %v, want an error reply", name, v)
		}
	}
	v := c.do("FCALL_RO", function(OpPeek), "1", key, "s", "f", "5", "1000", "1", "0", "0")
	if r := ints(t, v); len(r) != 3 || r[1] != 0 || r[2] != 5 {
		t.Errorf("a peek's settle of cost 0: %v, want {now, 0, 5}", v)
	}
}

func pairs(v ...any) []string {
	out := make([]string, len(v))
	for i, x := range v {
		switch x := x.(type) {
		case int64:
			out[i] = itoa(x)
		case int:
			out[i] = itoa(int64(x))
		default:
			out[i] = x.(string)
		}
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// redisNow is Redis's clock in microseconds.
func redisNow(t *testing.T, c *conn) int64 {
	t.Helper()
	r := ints(t, c.do("TIME"))
	return r[0]*1_000_000 + r[1]
}

// ints is an array reply's integers (TIME's are bulk strings).
func ints(t *testing.T, v redisproto.Value) []int64 {
	t.Helper()
	items, err := v.Array()
	if err != nil {
		t.Fatalf("%v: %v", v, err)
	}
	out := make([]int64, len(items))
	for i, it := range items {
		if out[i], err = it.Int64(); err != nil {
			s, _ := it.Text()
			if out[i], err = strconv.ParseInt(s, 10, 64); err != nil {
				t.Fatalf("%v: item %d: %v", v, i, err)
			}
		}
	}
	return out
}
