package algorithms

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// decide.lua answers two shapes on a short path (short.lua): one plain
// limit, and a lone throttled funnel; every other call takes the general
// path. For each shape of call the filter sends, the test pins the
// argument layout the Lua reads, and asks the Lua's own short_path which
// path the encoded call takes: an encoder change that moves an argument,
// or that turns a short path into dead code, fails here. The old build's
// script (13bdab3) reads the same layout; see
// TestOldAndNewBuildsShareState.
func TestEachShapeOfCallTakesItsPath(t *testing.T) {
	c := dial(t)
	// The library's code without the script's dispatch, then a probe.
	body, _, ok := strings.Cut(Script.Source(), "if ARGV[1] == 'e' then")
	if !ok {
		t.Fatal("the script's dispatch moved: update this test")
	}
	probe := body + "local grouped = ARGV[1] == 'g'\n" +
		"return short_path(KEYS, ARGV, grouped, tonumber(ARGV[grouped and 2 or 1])) or 'general'\n"
	must := mustLimit(t)
	funnel := must(NewFunnel(5, 1, time.Second))       // f 5 1000000
	log := must(NewSlidingLog(10, time.Minute))        // l 10 60000000
	counter := must(NewSlidingCounter(100, time.Hour)) // c 100 3600000
	conc := must(NewConcurrency(3, 30*time.Second))    // k 3 30000000
	k0, k1, block := "rl:{api|a}:0", "rl:{api|a}:1", "rl:{api|a}:block"
	tier, over := "rl:{api|a}:tier", "rl:{api|a}:override"
	tiers := []Tier{{Name: "free", Limits: []Limit{funnel}}, {Name: "pro", Limits: []Limit{funnel, counter}}}
	for _, tc := range []struct {
		name string
		op   Op
		cmd  func(Invoke) []byte
		want string // the arguments after the function's name, space-separated
		path string // decide.lua's path: one, throttle or general
	}{
		{"one funnel", OpDecide, func(inv Invoke) []byte {
			return AppendCommand(nil, RESP, inv, nil, []Check{{Key: k0, Limit: funnel, Cost: 1}})
		}, "1 " + k0 + " 0 f 5 1000000 1", "one"},
		{"one funnel, a block key", OpDecide, func(inv Invoke) []byte {
			return AppendCommand(nil, RESP, inv, []string{block}, []Check{{Key: k0, Limit: funnel, Cost: 1}})
		}, "2 " + block + " " + k0 + " 1 f 5 1000000 1", "one"},
		{"one limit of another algorithm, check only", OpDecide, func(inv Invoke) []byte {
			return AppendCall(nil, RESP, inv, OpDecide, []string{block}, []Check{{Key: k0, Limit: log, CheckOnly: true}}, nil)
		}, "2 " + block + " " + k0 + " 1 l 10 60000000 -1", "one"},
		{"several limits, a slot", OpDecide, func(inv Invoke) []byte {
			return AppendCommand(nil, RESP, inv, []string{block}, []Check{
				{Key: k0, Limit: funnel, Cost: 2}, {Key: k1, Limit: conc, Cost: 1 << 20}})
		}, "3 " + block + " " + k0 + " " + k1 + " 1 f 5 1000000 2 k 3 30000000 1048576", "general"},
		{"a lone throttled funnel", OpDecide, func(inv Invoke) []byte {
			return AppendCall(nil, RESP, inv, OpDecide, []string{block}, nil, []Choice{{Keys: []string{k0}, Cost: 1,
				Throttle: 2 * time.Second, Tiers: tiers[:1]}})
		}, "2 " + block + " " + k0 + " g 1 0 x 16 1 1 1 2000000 free 1 f 5 1000000", "throttle"},
		{"a plain limit and a choice of tier, override, slot and lease", OpDecide, func(inv Invoke) []byte {
			return AppendCall(nil, RESP, inv, OpDecide, []string{block}, []Check{{Key: "rl:{api|a}:9", Limit: log, Cost: 1}},
				[]Choice{{TierKey: tier, OverrideKey: over, Keys: []string{k0, k1}, Cost: 2, Slot: 7, Lease: 4, Tiers: tiers}})
		}, "6 " + block + " rl:{api|a}:9 " + tier + " " + over + " " + k0 + " " + k1 +
			" g 1 1 l 10 60000000 1 x 15 2 2 2 7 4 free 1 f 5 1000000 pro 2 f 5 1000000 c 100 3600000", "general"},
		{"a peek of a choice", OpPeek, func(inv Invoke) []byte {
			return AppendCall(nil, RESP, inv, OpPeek, nil, nil, []Choice{{TierKey: tier, Keys: []string{k0, k1}, CheckOnly: true, Tiers: tiers}})
		}, "3 " + tier + " " + k0 + " " + k1 + " g 0 0 x 1 2 -1 2 free 1 f 5 1000000 pro 2 f 5 1000000 c 100 3600000", "general"},
		{"a settle and a release", OpSettle, func(inv Invoke) []byte {
			return AppendSettle(nil, RESP, inv, []Settle{{Key: k0, Limit: funnel, At: 1700000000000000, Reserved: 10, Cost: 3},
				Release(k1, conc, 1<<20)})
		}, "2 " + k0 + " " + k1 + " s f 5 1000000 1700000000000000 10 3 k 3 30000000 0 1048576 0", ""},
		{"an epoch read", OpEpoch, func(inv Invoke) []byte { return AppendEpoch(nil, RESP, inv, "rl:epoch") }, "1 rl:epoch e", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := strings.Fields(tc.want)
			if got := decodeArgs(t, tc.cmd(FCall)); !reflect.DeepEqual(got, append([]string{"FCALL", function(tc.op)}, want...)) {
				t.Errorf("FCALL:\n got %q\nwant %q", got[2:], want)
			}
			// The script takes the same arguments; it tells the operations
			// apart by ARGV[1]: 's' settles, 'e' reads the epoch, else it
			// decides. (It has no peek: ratelimitctl peeks through FCALL.)
			if got := decodeArgs(t, tc.cmd(EvalSHA)); !reflect.DeepEqual(got, append([]string{"EVALSHA", Script.SHA}, want...)) {
				t.Errorf("EVALSHA:\n got %q\nwant %q", got[2:], want)
			}
			if tc.op != OpDecide && tc.op != OpPeek {
				return
			}
			args := append([]string{"EVAL", probe}, decodeArgs(t, tc.cmd(FCall))[2:]...)
			if got, _ := c.do(args...).Text(); got != tc.path {
				t.Errorf("takes the %q path, want %q", got, tc.path)
			}
		})
	}
}

func decodeArgs(t *testing.T, cmd []byte) []string {
	t.Helper()
	v, _, err := redisproto.Decode(cmd)
	if err != nil {
		t.Fatal(err)
	}
	elems, _ := v.Array()
	args := make([]string, len(elems))
	for i := range elems {
		args[i], _ = elems[i].Text()
	}
	return args
}
