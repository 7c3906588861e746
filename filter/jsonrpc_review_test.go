package filter

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
)

// A deny-cache hit of a rule in the HTTP form names the call of its own
// request that opened the denied key, not the call of the request whose
// reply the cache rendered last.
func TestCachedHTTPRefusalNamesItsCall(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[
	{"name":"rpc","key":[{"source":"header","name":"x-user"}],"jsonrpc":{},
	 "limits":[{"name":"per-hour","algorithm":"sliding_log","limit":1,"window":"1h"}]}]}`)
	h.Clock = time.Unix(1700000000, 0) // one Retry-After second for every reply
	const call, resp = `{"jsonrpc":"2.0","id":1,"method":"a"}`, `{"jsonrpc":"2.0","id":9,"result":1}`
	for i, c := range []struct {
		body   string
		fcalls int
		want   string
	}{
		{call, 1, ``},
		{jsonArray(call), 1, `"call":0`},
		{jsonArray(resp, resp, call), 0, `"call":2`},
		{jsonArray(call), 0, `"call":0`},
		{jsonArray(resp, call), 0, `"call":1`},
	} {
		o := h.sendCalls(c.body, "x-user=u")
		if o.fcalls != c.fcalls || !strings.Contains(o.body, c.want) {
			t.Fatalf("request %d %s: %+v; want %d calls, a body with %s", i, c.body, o, c.fcalls, c.want)
		}
	}
}

// An id JSON-RPC does not allow (NaN, Infinity: a number only to
// Python's parser) makes the body not JSON-RPC, so no refusal echoes it
// into a body that is not JSON.
func TestNonFiniteIDNotJSONRPC(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[
	{"name":"tools","key":[{"source":"header","name":"x-user"}],"jsonrpc":{"refusal":"jsonrpc"},
	 "limits":[{"name":"per-hour","algorithm":"sliding_log","limit":1,"window":"1h"}]}]}`)
	h.sendRPC(`{"jsonrpc":"2.0","id":1,"method":"a"}`) // spends the limit
	for _, id := range []string{"NaN", "Infinity", "-Infinity"} {
		for _, body := range []string{`{"jsonrpc":"2.0","id":` + id + `,"method":"a"}`, `[{"jsonrpc":"2.0","id":2,"method":"a"},{"jsonrpc":"2.0","id":` + id + `,"method":"a"}]`} {
			fs := h.sendRPC(body)
			if fs.Status != 400 || !json.Valid([]byte(fs.Body)) || !strings.Contains(fs.Body, `"id":null`) || !strings.Contains(fs.Body, "not a JSON-RPC request") {
				t.Errorf("%s: %d %s; want 400, one JSON object, id null, not JSON-RPC", body, fs.Status, fs.Body)
			}
		}
	}
}

// A body read only in part (a bad element after good ones) is answered
// as an unreadable one: one object with id null, not errors for the ids
// before the bad element alone.
func TestUnreadableBatchAnsweredWithoutPartialIDs(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[
	{"name":"tools","key":[{"source":"header","name":"x-user"}],"jsonrpc":{"refusal":"jsonrpc"},
	 "limits":[{"name":"per-hour","algorithm":"sliding_log","limit":3,"window":"1h"}]}]}`)
	for range 3 {
		if fs := h.sendRPC(`{"jsonrpc":"2.0","id":1,"method":"a"}`); fs.Status != 0 {
			t.Fatalf("%d %s; want admitted", fs.Status, fs.Body)
		}
	}
	fs := h.sendRPC(`[{"jsonrpc":"2.0","id":7,"method":"a"},1,{"jsonrpc":"2.0","id":8,"method":"a"}]`)
	if fs.Status != 400 || !strings.HasPrefix(fs.Body, `{"jsonrpc":"2.0","id":null,`) || !json.Valid([]byte(fs.Body)) {
		t.Fatalf("%d %s; want 400, one object with id null", fs.Status, fs.Body)
	}
}

// A jsonrpc rule's near_limit header names each limit once, by the key
// with the least left: a client reading it as the RateLimit header's
// list is not told of a looser key's remaining.
func TestNearHeaderOncePerLimit(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[
	{"name":"tools","key":[{"source":"header","name":"x-user"},{"source":"call","path":"params.name"}],"jsonrpc":{},
	 "near_limit":{"ratio":0.05,"header":"x-near"},
	 "limits":[{"name":"per-hour","algorithm":"sliding_log","limit":10,"window":"1h"}]}]}`)
	fs := filtertest.NewStream("192.0.2.7:40000", nil)
	st := h.plugin.NewStream(fs)
	st.SetBodyFollows(true)
	st.OnRequestHeaders([][2]string{{":method", "POST"}, {":path", "/rpc"}, {"x-user", "u"}})
	st.OnRequestBody([]byte(jsonArray(toolMsg(1, "b"), toolMsg(2, "a"), toolMsg(3, "a"), toolMsg(4, "c"), toolMsg(5, "a"))))
	h.Pump()
	fs.Upstream = map[string]string{":status": "200"}
	st.OnResponseHeaders(true)
	st.OnDone()
	if got := fs.Response["x-near"]; got != `"per-hour";r=7` {
		t.Fatalf("x-near: %s; want \"per-hour\";r=7 (key a's)", got)
	}
}

// An array of one call is a batch: its refusal is an array of one error
// object, and it counts in ratelimit.jsonrpc.batches; a lone object is
// answered with an object. A body that is not JSON-RPC counts in neither
// metric, however many of its elements are calls.
func TestArrayOfOneIsABatch(t *testing.T) {
	h := toolsHost(t, "", 100, func(sp *rpcSpec) { sp.refuse, sp.j.Refusal = true, config.RefusalJSONRPC })
	o := h.sendCalls(jsonArray(toolMsg(7, "nope")), "x-user=u")
	if o.status != 200 || !strings.HasPrefix(o.body, `[{"jsonrpc":"2.0","id":7,`) || !strings.HasSuffix(o.body, "}]") {
		t.Fatalf("%+v; want 200 and an array of one error object, id 7", o)
	}
	if c, b := h.Counters["ratelimit.jsonrpc.calls"], h.Counters["ratelimit.jsonrpc.batches"]; c != 1 || b != 1 {
		t.Fatalf("metrics: calls %d, batches %d; want 1, 1", c, b)
	}
	o = h.sendCalls(toolMsg(8, "nope"), "x-user=u")
	if o.status != 200 || !strings.HasPrefix(o.body, `{"jsonrpc":"2.0","id":8,`) {
		t.Fatalf("%+v; want 200 and one error object, id 8", o)
	}
	for _, body := range []string{
		jsonArray(toolMsg(1, "search"), `{"jsonrpc":"1.0","id":2,"method":"tools/call"}`),
		jsonArray(toolMsg(1, "search"), `{"jsonrpc":"2.0","id":NaN,"method":"tools/call"}`),
	} {
		if o := h.sendCalls(body, "x-user=u"); o.status != 400 || o.fcalls != 0 {
			t.Fatalf("%s: %+v; want 400, not JSON-RPC", body, o)
		}
	}
	if c, b := h.Counters["ratelimit.jsonrpc.calls"], h.Counters["ratelimit.jsonrpc.batches"]; c != 2 || b != 1 {
		t.Fatalf("metrics after bodies not JSON-RPC: calls %d, batches %d; want 2, 1 as before", c, b)
	}
}
