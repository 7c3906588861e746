package algorithms

import (
	"strconv"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// Tests of args.lua's bounds at their edges: each kills a one-line bug
// that the tests far from the edges let pass.

// refused fails t unless v is the library's "bad ..." error reply (not a
// Lua runtime error, nor a decision).
func refused(t *testing.T, what string, v interface{ Err() error }) {
	t.Helper()
	if err := v.Err(); err == nil || !strings.Contains(err.Error(), "ERR ratelimit: bad") {
		t.Errorf("%s: %v, want the library's bad arguments reply", what, v)
	}
}

// Every count, cost, time and limit argument is a whole number: a
// fractional or negative one is refused with the library's reply, never
// a Lua runtime error ("attempt to perform arithmetic on ... nil", which
// -0.5 gave a sliding log) nor a decision taken on it (1.5 was charged).
// Issue 29, item 3.
func TestFunctionsRefuseFractionalAndNegativeNumbers(t *testing.T) {
	c := dial(t)
	p := redistest.Prefix(t)
	var keys []string // a key for each call: a call taken on main must not spoil the next
	key := func() string { keys = append(keys, p+"{u}:"+strconv.Itoa(len(keys))); return keys[len(keys)-1] }
	call := func(what string, args ...string) {
		t.Helper()
		refused(t, what+" "+strings.Join(args[2:], " "), c.do(args...))
	}
	decide, settle := function(OpDecide), function(OpSettle)
	for _, x := range []string{"1.5", "0.5", "-0.5", "-1.5", "-2", "nan", "inf", "-inf"} {
		for _, alg := range []string{"l", "c", "f", "k"} {
			// decide's one-limit path, then its general path, argument by argument.
			one := []string{alg, "5", "1000", "1"}
			for i := range one[1:] {
				args := append([]string{}, one...)
				args[1+i] = x
				call("one limit", append([]string{"FCALL", decide, "1", key(), "0"}, args...)...)
				call("two limits", append([]string{"FCALL", decide, "2", key(), key(), "0", "l", "5", "1000", "1"}, args...)...)
			}
			// settle's a, b, at, reserved and cost.
			s := []string{"s", alg, "5", "1000", "1", "1", "1"}
			for i := 2; i < len(s); i++ {
				args := append([]string{}, s...)
				args[i] = x
				call("settle", append([]string{"FCALL", settle, "1", key()}, args...)...)
			}
		}
		// A choice's flags, positions, cost and tier count; its slot, lease
		// and max delay; a tier's count of limits.
		for _, args := range [][]string{
			{"x", x, "1", "1", "1", "d", "1", "l", "5", "1000"},
			{"x", "0", x, "1", "1", "d", "1", "l", "5", "1000"},
			{"x", "0", "1", x, "1", "d", "1", "l", "5", "1000"},
			{"x", "0", "1", "1", x, "d", "1", "l", "5", "1000"},
			{"x", "0", "1", "1", "1", "d", x, "l", "5", "1000"},
			{"x", "4", "1", "1", "1", x, "d", "1", "k", "5", "1000"},
			{"x", "8", "1", "1", "1", x, "d", "1", "l", "5", "1000"},
			{"x", "16", "1", "1", "1", x, "d", "1", "f", "5", "1000"},
			{"x", "16", "1", x, "1", "1000", "d", "1", "f", "5", "1000"},
		} {
			// Alone (a lone throttle takes short.lua's path), and after a plain limit.
			call("choice", append([]string{"FCALL", decide, "1", key(), "g", "0", "0"}, args...)...)
			call("choice after a limit", append([]string{"FCALL", decide, "2", key(), key(), "g", "0", "1", "l", "5", "1000", "1"}, args...)...)
		}
		call("block count", "FCALL", decide, "1", key(), x, "l", "5", "1000", "1")
	}
	if n, _ := c.do(append([]string{"EXISTS"}, keys...)...).Int64(); n != 0 {
		t.Errorf("refused calls wrote %d keys", n)
	}
	// The same calls with whole numbers are decided and settled.
	k1, k2 := key(), key()
	if v := c.do("FCALL", decide, "2", k1, k2, "0", "l", "5", "1000", "1", "c", "5", "1000", "-1"); v.Err() != nil {
		t.Errorf("whole numbers: %v", v)
	}
	if v := c.do("FCALL", settle, "1", k1, "s", "l", "5", "1000", "1", "1", "0"); v.Err() != nil {
		t.Errorf("whole numbers: %v", v)
	}
}

// max_number is 2^53, the last whole number a double holds with its
// neighbours: a cost, reservation or time of 2^53 is taken, the next
// double (2^53 + 2) and 1e300 are refused. Kills a bound that moves, or
// is lost, in decide (both paths) or settle.
func TestFunctionsBoundNumbersAt2To53(t *testing.T) {
	c := dial(t)
	p := redistest.Prefix(t)
	decide, settle := function(OpDecide), function(OpSettle)
	const edge, past = "9007199254740992", "9007199254740994"
	k := 0
	key := func() string { k++; return p + "{u}:" + strconv.Itoa(k) }
	for _, x := range []string{edge, past, "1e300"} {
		ok := x == edge
		calls := map[string][]string{
			"one limit's cost":  {"FCALL", decide, "1", key(), "0", "l", "5", "1000", x},
			"two limits' cost":  {"FCALL", decide, "2", key(), key(), "0", "l", "5", "1000", "1", "l", "5", "1000", x},
			"a throttle's cost": {"FCALL", decide, "1", key(), "g", "0", "0", "x", "16", "1", x, "1", "1000", "d", "1", "f", "5", "1000"},
			"a reservation":     {"FCALL", settle, "1", key(), "s", "l", "5", "1000", "1", x, "0"},
			"a settle's cost":   {"FCALL", settle, "1", key(), "s", "c", "5", "1000", "1", "1", x},
			"a settle's time":   {"FCALL", settle, "1", key(), "s", "f", "5", "1000", x, "1", "1"},
		}
		for what, args := range calls {
			v := c.do(args...)
			if ok && v.Err() != nil {
				t.Errorf("%s %s: %v, want it taken", what, x, v)
			}
			if !ok {
				refused(t, what+" "+x, v)
			}
		}
	}
}

// A call may carry 256 keys, not 257: both decide and settle. Kills a
// bound that is off by one, or compared the wrong way.
func TestFunctionsBoundKeysAt256(t *testing.T) {
	c := dial(t)
	p := redistest.Prefix(t)
	for _, n := range []int{256, 257} {
		dec := []string{"FCALL", function(OpDecide), strconv.Itoa(n)}
		set := []string{"FCALL", function(OpSettle), strconv.Itoa(n)}
		for i := range n {
			key := p + "{u}:" + strconv.Itoa(i)
			dec, set = append(dec, key), append(set, key)
		}
		dec, set = append(dec, "0"), append(set, "s")
		for range n {
			dec = append(dec, "l", "1000", "1000", "1")
			set = append(set, "l", "1000", "1000", "1", "1", "1")
		}
		d, s := c.do(dec...), c.do(set...)
		if n == 256 && (d.Err() != nil || s.Err() != nil) {
			t.Errorf("256 keys: decide %v, settle %v; want both taken", d.Err(), s.Err())
		}
		if n == 257 {
			if err := d.Err(); err == nil || !strings.Contains(err.Error(), "too many keys") {
				t.Errorf("257 keys: decide %v", d.Err())
			}
			refused(t, "257 settles", s)
		}
	}
}
