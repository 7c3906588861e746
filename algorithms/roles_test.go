package algorithms

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// Whoever holds the filter's credential may call the library's functions
// with any keys and arguments. None of them may write anything but a
// limit's state: a block, a tier, an override and the epoch are only read.
func TestFunctionsRefuseKeysOfTheWrongRole(t *testing.T) {
	c := dial(t)
	p := redistest.Prefix(t)
	base := p + "{api|alice}"
	block, tier, over, epoch := base+":block", base+":tier", base+":override", p+"epoch"
	c.do("SET", block, "1", "PX", "3600000")
	c.do("SET", tier, "pro")
	c.do("SET", over, "f:5:1000")
	c.do("SET", epoch, "7")
	fn := func(op Op) string { return function(op) }
	for name, args := range map[string][]string{
		"settle a block":        {fn(OpSettle), "1", block, "s", "f", "1", "1", "1", "0", "0"},
		"settle a tier":         {fn(OpSettle), "1", tier, "s", "f", "1", "1", "1", "0", "0"},
		"settle the epoch":      {fn(OpSettle), "1", epoch, "s", "f", "1", "1", "1", "0", "0"},
		"decide on a block":     {fn(OpDecide), "1", block, "0", "f", "5", "1000", "1"},
		"decide on an override": {fn(OpDecide), "1", over, "0", "l", "5", "1000", "1"},
		"two limits, one tier":  {fn(OpDecide), "2", base + ":0", tier, "0", "f", "5", "1000", "1", "c", "5", "1000", "1"},
		"a state key as block":  {fn(OpDecide), "2", base + ":0", base + ":1", "1", "f", "5", "1000", "1"},
		"tier key not a tier":   {fn(OpDecide), "2", block, base + ":0", "g", "0", "0", "x", "1", "1", "1", "1", "d", "1", "f", "5", "1000"},
		"epoch of a block":      {fn(OpEpoch), "1", block, "e"},
		"epoch of a rule key":   {fn(OpEpoch), "1", p + "{epoch}", "e"},
		"decide as settle":      {fn(OpDecide), "1", base + ":0", "s", "f", "1", "1", "1", "0", "0"},
		"peek that charges":     {fn(OpPeek), "1", base + ":0", "0", "f", "5", "1000", "1"},
		"peek of a throttle":    {fn(OpPeek), "1", base + ":0", "g", "0", "0", "x", "16", "1", "1", "1", "1000", "d", "1", "f", "5", "1000"},
		"a number past 2^53":    {fn(OpDecide), "1", base + ":0", "0", "f", "5", "1e300", "1"},
	} {
		v := c.do(append([]string{"FCALL"}, args...)...)
		if v.Err() == nil || !strings.Contains(v.Err().Error(), "ratelimit:") {
			t.Errorf("%s: %v, want an error reply", name, v)
		}
	}
	if ms, _ := c.do("PTTL", block).Int64(); ms < 3590000 {
		t.Errorf("the block's PTTL is %d ms", ms)
	}
	for key, want := range map[string]string{tier: "pro", over: "f:5:1000", epoch: "7"} {
		if got, _ := c.do("GET", key).Text(); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	if n, _ := c.do("EXISTS", base+":0", base+":1").Int64(); n != 0 {
		t.Errorf("%d state keys written by refused calls", n)
	}

	// The same calls with keys of the right roles are decided.
	l := mustLimit(t)(NewFunnel(5, 1, time.Second))
	d := c.decide("", []Check{{Key: base + ":0", Limit: l, Cost: 1}})
	if !d.Allowed() {
		t.Fatalf("decide on a state key: %+v", d)
	}
	if v := c.do("FCALL", fn(OpEpoch), "1", epoch, "e"); v.String() != "7" {
		t.Fatalf("epoch: %v", v)
	}
	if v := c.do("FCALL", fn(OpPeek), "2", block, base+":0", "1", "f", "5", "1000000", "-1"); v.Err() != nil {
		t.Fatalf("peek: %v", v)
	}
}

// A call of more keys than any request carries is refused before it reads
// a key.
func TestFunctionsBoundTheirKeys(t *testing.T) {
	c := dial(t)
	p := redistest.Prefix(t)
	args := []string{"FCALL", function(OpDecide), "300"}
	for i := 0; i < 300; i++ {
		args = append(args, p+"{u}:"+string(rune('0'+i%10)))
	}
	args = append(args, "0")
	for i := 0; i < 300; i++ {
		args = append(args, "f", "5", "1000", "1")
	}
	if v := c.do(args...); v.Err() == nil || !strings.Contains(v.Err().Error(), "too many keys") {
		t.Fatalf("300 keys: %v", v)
	}
}

// A key is a limit's state only inside the filter's key space: a rule key
// "<prefix>{...}" extended by ":<digits>". Keys such as "<prefix>app:1",
// with no hash tag, are some other application's, and every entry point
// refuses them: this kills the bug of is_state's pattern losing its "}"
// (roles.lua), and likewise of has_role's for a block key.
func TestFunctionsRefuseKeysOutsideTheKeySpace(t *testing.T) {
	c := dial(t)
	p := redistest.Prefix(t)
	var keys []string // one of its own for each call
	app := func(suffix string) string {
		keys = append(keys, p+"app"+strconv.Itoa(len(keys))+suffix)
		return keys[len(keys)-1]
	}
	state := p + "{u}:0"
	for name, args := range map[string][]string{
		"decide, one limit":     {function(OpDecide), "1", app(":1"), "0", "f", "5", "1000", "1"},
		"decide, two limits":    {function(OpDecide), "2", state, app(":1"), "0", "f", "5", "1000", "1", "l", "5", "1000", "1"},
		"decide, a choice":      {function(OpDecide), "1", app(":1"), "g", "0", "0", "x", "0", "1", "1", "1", "d", "1", "l", "5", "1000"},
		"decide, a throttle":    {function(OpDecide), "1", app(":1"), "g", "0", "0", "x", "16", "1", "1", "1", "1000", "d", "1", "f", "5", "1000"},
		"decide, a block":       {function(OpDecide), "2", app(":block"), state, "1", "f", "5", "1000", "1"},
		"peek":                  {function(OpPeek), "1", app(":1"), "0", "f", "5", "1000", "-1"},
		"settle, a charge":      {function(OpSettle), "1", app(":1"), "s", "f", "5", "1000", "1", "0", "3"},
		"settle, a refund":      {function(OpSettle), "1", app(":1"), "s", "l", "5", "1000", "1", "3", "0"},
		"settle, the second of": {function(OpSettle), "2", state, app(":2"), "s", "f", "5", "1000", "1", "0", "1", "c", "5", "1000", "1", "0", "1"},
	} {
		v := c.do(append([]string{"FCALL"}, args...)...)
		if v.Err() == nil || !strings.Contains(v.Err().Error(), "ratelimit:") {
			t.Errorf("%s: %v, want an error reply", name, v)
		}
	}
	if n, _ := c.do(append([]string{"EXISTS", state}, keys...)...).Int64(); n != 0 {
		t.Errorf("%d keys written by refused calls", n)
	}
}
