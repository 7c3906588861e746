package filter

import (
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// Two rules on one call: "open" has manual_block off, "guarded" keeps it.
const openAndGuarded = `{"redis":{"cluster":"redis"},"rules":[
	{"name":"open","manual_block":false,"key":[{"source":"header","name":"x-user"}],
	 "limits":[{"algorithm":"funnel","capacity":2,"rate":1,"period":"1m"}]},
	{"name":"guarded","key":[{"source":"header","name":"x-team"}],
	 "limits":[{"algorithm":"sliding_log","limit":100,"window":"1m"}]}]}`

// sentCommand runs a request's headers through the filter and returns the
// arguments of the one call it dispatched, without sending it.
func sentCommand(t *testing.T, h *fakeHost, headers ...string) []string {
	t.Helper()
	pairs := [][2]string{{":method", "GET"}, {":path", "/"}, {":authority", "example.com"}}
	for _, kv := range headers {
		k, v, _ := strings.Cut(kv, "=")
		pairs = setPair(pairs, k, v)
	}
	st := h.plugin.NewStream(filtertest.NewStream("192.0.2.7:40000", nil))
	defer st.OnDone()
	if st.OnRequestHeaders(pairs) != Pause || len(h.Queue) != 1 {
		t.Fatalf("want one call in flight, have %d", len(h.Queue))
	}
	cmd := h.Queue[0].Cmd
	h.Queue = nil
	v, _, err := redisproto.Decode(cmd)
	if err != nil {
		t.Fatal(err)
	}
	elems, err := v.Array()
	if err != nil {
		t.Fatal(err)
	}
	args := make([]string, len(elems))
	for i := range elems {
		args[i], _ = elems[i].Text()
	}
	return args
}

// A rule with manual_block false puts no block key in the call; the other
// rule of the call keeps its own.
func TestManualBlockOffSendsNoBlockKey(t *testing.T) {
	h := newFakeHost(t, openAndGuarded)
	p := h.plugin.cfg.Redis.Prefix
	// EVALSHA sha numkeys keys... nb args...
	args := sentCommand(t, h, "x-user=alice")
	if len(args) != 9 || args[2] != "1" || args[3] != p+"{open|alice}:0" || args[4] != "0" {
		t.Fatalf("open rule alone: %q", args)
	}
	args = sentCommand(t, h, "x-user=alice", "x-team=red")
	want := []string{"3", p + "{guarded|red}:block", p + "{open|alice}:0", p + "{guarded|red}:0", "1"}
	if len(args) != 15 || strings.Join(args[2:7], " ") != strings.Join(want, " ") {
		t.Fatalf("both rules: %q, want %q after the SHA", args, want)
	}
}

// A block key set for a rule with manual_block false does not block it;
// its limits still apply, and its denials are still cached by its key.
func TestManualBlockOffIgnoresBlockKey(t *testing.T) {
	h := newFakeHost(t, openAndGuarded)
	h.Clock = time.Now()
	p := h.plugin.cfg.Redis.Prefix
	for _, key := range []string{"{open|mallory}:block", "{guarded|red}:block"} {
		if _, err := server.Do("SET", p+key, "1", "EX", "120"); err != nil {
			t.Fatal(err)
		}
	}
	if o := h.send("x-user=mallory"); o.status != 200 {
		t.Fatalf("blocked though manual_block is false: %+v", o)
	}
	if o := h.send("x-user=mallory", "x-team=red"); o.status != 429 ||
		o.body != `{"error":"blocked","rule":"guarded","retry_after":120}`+"\n" {
		t.Fatalf("the guarded rule's block: %+v", o)
	}
	if h.Counters["ratelimit.rule.open.blocked"] != 0 || h.Counters["ratelimit.rule.guarded.blocked"] != 1 {
		t.Fatalf("metrics: %v", h.Counters)
	}
	// Two fit the funnel (the blocked request charged nothing); the third
	// is denied by Redis, and the fourth by the deny cache.
	if o := h.send("x-user=mallory"); o.status != 200 {
		t.Fatalf("second: %+v", o)
	}
	calls := h.Calls
	if o := h.send("x-user=mallory"); o.status != 429 || !strings.Contains(o.body, `"rate_limited"`) || h.Calls != calls+1 {
		t.Fatalf("third: %+v", o)
	}
	if o := h.send("x-user=mallory"); o.status != 429 || h.Calls != calls+1 || h.Counters["ratelimit.deny_cache.hits"] != 1 {
		t.Fatalf("fourth, from the deny cache: %+v, %d calls", o, h.Calls-calls)
	}
}
