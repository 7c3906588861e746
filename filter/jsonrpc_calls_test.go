package filter

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/clusterslot"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
	"github.com/redisrate/envoy-redis-ratelimit/filter/jsonrpc"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
)

// toolsConf is one rule on /rpc keyed by x-user; toolsSpec makes it an
// MCP rule keyed per tool too, pricing search 2 and deep 5, any other 1.
const toolsConf = `{"redis":{"cluster":"redis"%s},"rules":[{"name":"tools","match":{"path":"/rpc"},
	"key":[{"source":"header","name":"x-user"}],"limits":[{"algorithm":"sliding_log","limit":%d,"window":"1h"}]}]}`

func toolsHost(t *testing.T, redis string, limit int, edit func(*rpcSpec)) *fakeHost {
	sp := rpcSpec{j: config.JSONRPC{Protocol: config.ProtocolMCP, Free: config.MCPFree},
		callParts: []string{"params.name"},
		tools:     map[string]jsonrpc.Entry{"search": {Units: 2}, "deep": {Units: 5}}, def: 1}
	if edit != nil {
		edit(&sp)
	}
	return rpcHost(t, fmt.Sprintf(toolsConf, redis, limit), map[string]rpcSpec{"tools": sp})
}

// A batch of N calls over K tools is one decide call of K keys, each
// charged the sum of its calls' costs, in first-appearance order; free
// calls (initialize, ping, notifications/*) and a client's response add
// nothing.
func TestBatchChargesEachKeyItsSum(t *testing.T) {
	h := toolsHost(t, "", 100, nil)
	body := jsonArray(`{"jsonrpc":"2.0","id":9,"result":{}}`, toolMsg(1, "search"), reqMsg(2, "ping", ""), toolMsg(3, "deep"),
		toolMsg(4, "search"), noteMsg("notifications/initialized"), toolMsg(5, "fetch"), toolMsg(6, "deep"), toolMsg(7, "search"),
		reqMsg(8, "initialize", "{}"))
	o := h.sendCalls(body, "x-user=alice")
	want := []string{"{tools|alice}|search}", "{tools|alice}|deep}", "{tools|alice}|fetch}"}
	if o.status != 0 || o.fcalls != 1 || !slices.Equal(o.keys, want) || !slices.Equal(o.costs, []int64{6, 10, 1}) {
		t.Fatalf("%+v; want admitted, one call charging %q 6, 10, 1", o, want)
	}
	if c, b := h.Counters["ratelimit.jsonrpc.calls"], h.Counters["ratelimit.jsonrpc.batches"]; c != 10 || b != 1 {
		t.Fatalf("metrics: calls %d, batches %d; want 10, 1", c, b)
	}
	if o := h.sendCalls(toolMsg(1, "deep"), "x-user=alice"); o.status != 0 || !slices.Equal(o.costs, []int64{5}) {
		t.Fatalf("one call: %+v", o)
	}
	if b := h.Counters["ratelimit.jsonrpc.batches"]; b != 1 {
		t.Fatalf("a single call counted as a batch: %d", b)
	}
}

// Plain JSON-RPC: a notification is charged; a free method, a method of
// cost 0 and a response are not; without call parts every charged call
// sums onto the rule's one key.
func TestBatchOneKeyNotificationsCharged(t *testing.T) {
	h := rpcHost(t, fmt.Sprintf(toolsConf, "", 100), map[string]rpcSpec{"tools": {
		j:       config.JSONRPC{Free: []string{"eth_free*"}},
		methods: map[string]jsonrpc.Entry{"eth_chainId": {}, "eth_call": {Units: 26}, "eth_get*": {Units: 20}}, def: 3}})
	o := h.sendCalls(jsonArray(reqMsg(1, "eth_chainId", ""), reqMsg(2, "eth_call", "[]"), noteMsg("eth_getBalance"),
		reqMsg(3, "eth_freeStuff", ""), reqMsg(4, "other", ""), `{"jsonrpc":"2.0","id":5,"error":{"code":1}}`), "x-user=bob")
	if o.status != 0 || !slices.Equal(o.keys, []string{"{tools|bob}"}) || !slices.Equal(o.costs, []int64{49}) {
		t.Fatalf("%+v; want one key charged 26+20+3", o)
	}
	if o := h.sendCalls(jsonArray(reqMsg(1, "eth_chainId", ""), reqMsg(2, "eth_freeX", "")), "x-user=bob"); o.status != 0 || o.fcalls != 0 {
		t.Fatalf("only free and cost-0 calls: %+v; want admitted with no call", o)
	}
}

// match.call: a call that fails it adds no key for the rule.
func TestMatchCall(t *testing.T) {
	h := toolsHost(t, "", 100, func(sp *rpcSpec) {
		sp.j.Free = nil
		sp.match = []config.HeaderMatch{{Name: "method", Op: config.HeaderExact, Value: "tools/call"}}
	})
	o := h.sendCalls(jsonArray(reqMsg(1, "ping", ""), toolMsg(2, "search"), reqMsg(3, "resources/list", "{}")), "x-user=a")
	if o.status != 0 || !slices.Equal(o.keys, []string{"{tools|a}|search}"}) || !slices.Equal(o.costs, []int64{2}) {
		t.Fatalf("%+v; want only the tools/call charged", o)
	}
}

// callVerdict evaluates rule ri over body as OnRequestBody would and
// returns the refusal keyCalls makes, and the rule's keys.
func (h *fakeHost) callVerdict(ri int, body string, headers ...[2]string) (verdict, []string) {
	h.t.Helper()
	fs := filtertest.NewStream("192.0.2.7:40000", nil)
	st := h.plugin.NewStream(fs)
	defer st.OnDone()
	st.SetBodyFollows(true)
	if headers == nil {
		headers = [][2]string{{"x-user", "u"}}
	}
	st.OnRequestHeaders(append([][2]string{{":method", "POST"}, {":path", "/rpc"}}, headers...))
	st.req.body, st.req.bodyLen = append(st.req.body[:0], body...), len(body)
	st.req.bodyMax = st.pol.cfg.Rules[ri].MaxRequestBodyBytes
	r := st.readCalls()
	v := st.keyCalls(ri, r)
	var keys []string
	for i := range r.ends {
		keys = append(keys, strings.TrimPrefix(string(r.key(i)), st.pol.cfg.Redis.Prefix))
	}
	return v, keys
}

// A name the table refuses (default "refuse") refuses the whole batch,
// naming the call; so does a key past max_keys; and a missing call part
// under on_missing_key deny. Nothing is called.
func TestCallRefusals(t *testing.T) {
	h := toolsHost(t, "", 100, func(sp *rpcSpec) {
		sp.refuse = true
		sp.methods = map[string]jsonrpc.Entry{"tools/list": {Units: 1}}
		sp.tools["fetch"] = jsonrpc.Entry{Units: 1}
		sp.j.MaxKeys = 2
	})
	h.plugin.cfg.Rules[0].OnMissing = config.MissingDeny
	for _, c := range []struct {
		name, body string
		why        reason
		call       int
	}{
		{"unknown tool", jsonArray(toolMsg(1, "search"), toolMsg(2, "nope")), reasonUnknownTool, 2},
		{"tool name not a string", jsonArray(reqMsg(1, "tools/call", `{"name":7}`)), reasonUnknownTool, 1},
		{"unknown method", jsonArray(reqMsg(1, "tools/list", `{"name":"x"}`), noteMsg("resources/list")), reasonUnknownMethod, 2},
		{"too many keys", jsonArray(toolMsg(1, "search"), toolMsg(2, "deep"), toolMsg(3, "search"), toolMsg(4, "fetch")), reasonTooManyKeys, 4},
		{"missing part", jsonArray(reqMsg(1, "tools/list", "")), reasonMissingKey, 1},
	} {
		v, _ := h.callVerdict(0, c.body)
		if v.reason != c.why || v.call != c.call || v.rule != 0 {
			t.Errorf("%s: %+v; want %s at call %d", c.name, v, c.why, c.call)
		}
		if o := h.sendCalls(c.body, "x-user=u"); o.status != 400 || o.fcalls != 0 || !strings.Contains(o.body, c.why.String()) {
			t.Errorf("%s: %+v; want 400 %s, no call", c.name, o, c.why)
		}
	}
}

// A request part missing under on_missing_key deny refuses the batch,
// naming no call.
func TestMissingRequestPart(t *testing.T) {
	h := toolsHost(t, "", 100, nil)
	h.plugin.cfg.Rules[0].OnMissing = config.MissingDeny
	v, _ := h.callVerdict(0, jsonArray(reqMsg(1, "ping", ""), toolMsg(2, "search")), [2]string{"x-other", "u"})
	if v.reason != reasonMissingKey || v.call != 0 {
		t.Fatalf("%+v; want missing_key of no call", v)
	}
	if o := h.sendCalls(jsonArray(reqMsg(1, "ping", ""), toolMsg(2, "search"))); o.status != 400 || o.fcalls != 0 {
		t.Fatalf("no x-user: %+v; want 400", o)
	}
	if o := h.sendCalls(jsonArray(reqMsg(1, "ping", ""))); o.status != 0 {
		t.Fatalf("no x-user, only a free call: %+v; want admitted, nothing to charge", o)
	}
}

// A missing call part: skip leaves that call uncharged by the rule;
// shared keys it with an empty part.
func TestMissingCallPart(t *testing.T) {
	body := jsonArray(toolMsg(1, "search"), reqMsg(2, "tools/call", `{"arguments":{}}`), reqMsg(3, "tools/call", `{"name":""}`))
	for _, c := range []struct {
		missing config.MissingKey
		keys    []string
		costs   []int64
	}{
		{config.MissingSkip, []string{"{tools|u}|search}"}, []int64{2}},
		{config.MissingShared, []string{"{tools|u}|search}", "{tools|u}|}"}, []int64{2, 2}},
	} {
		h := toolsHost(t, "", 100, nil)
		h.plugin.cfg.Rules[0].OnMissing = c.missing
		if o := h.sendCalls(body, "x-user=u"); o.status != 0 || !slices.Equal(o.keys, c.keys) || !slices.Equal(o.costs, c.costs) {
			t.Errorf("on_missing_key %d: %+v; want %q %v", c.missing, o, c.keys, c.costs)
		}
	}
}

// One spent key refuses the whole batch and charges none of its keys;
// the denial is cached for the key's summed cost only: the same batch is
// answered from the deny cache, a cheaper one goes to Redis.
func TestRefusedBatchChargesNothing(t *testing.T) {
	h := toolsHost(t, "", 10, nil)
	if o := h.sendCalls(jsonArray(toolMsg(1, "search"), toolMsg(2, "search"), toolMsg(3, "deep")), "x-user=a"); o.status != 0 {
		t.Fatalf("first batch: %+v", o) // search 4, deep 5
	}
	spent := jsonArray(toolMsg(1, "search"), toolMsg(2, "deep"), toolMsg(3, "deep"), toolMsg(4, "fetch"))
	if o := h.sendCalls(spent, "x-user=a"); o.status != 429 || o.fcalls != 1 {
		t.Fatalf("deep 5 + 10: %+v; want 429 from Redis", o)
	}
	// search took nothing: 4 + 2*3 fits 10, one more search does not.
	if o := h.sendCalls(jsonArray(toolMsg(1, "search"), toolMsg(2, "search"), toolMsg(3, "search")), "x-user=a"); o.status != 0 {
		t.Fatalf("search after the refused batch: %+v; want admitted (the refusal charged nothing)", o)
	}
	if o := h.sendCalls(toolMsg(1, "search"), "x-user=a"); o.status != 429 {
		t.Fatalf("search at 10: %+v; want 429", o)
	}
	if o := h.sendCalls(toolMsg(1, "fetch"), "x-user=a"); o.status != 0 || !slices.Equal(o.costs, []int64{1}) {
		t.Fatalf("fetch: %+v; want admitted, its first unit", o)
	}
	hits := h.Counters["ratelimit.deny_cache.hits"]
	if o := h.sendCalls(jsonArray(toolMsg(1, "deep"), toolMsg(2, "fetch"), toolMsg(3, "deep")), "x-user=a"); o.status != 429 || o.fcalls != 0 {
		t.Fatalf("deep 10 again: %+v; want 429 from the deny cache", o)
	}
	if h.Counters["ratelimit.deny_cache.hits"] != hits+1 {
		t.Fatal("no deny cache hit")
	}
}

// The deny cache is cost-aware per key: a key denied for a batch's sum
// still reaches Redis for a smaller one.
func TestDenyCacheBatchKeyCost(t *testing.T) {
	h := toolsHost(t, "", 10, nil)
	h.sendCalls(jsonArray(toolMsg(1, "deep")), "x-user=a") // deep 5
	if o := h.sendCalls(jsonArray(toolMsg(1, "deep"), toolMsg(2, "deep")), "x-user=a"); o.status != 429 {
		t.Fatalf("deep 10 more: %+v; want 429", o)
	}
	if o := h.sendCalls(jsonArray(toolMsg(1, "fetch"), toolMsg(2, "deep")), "x-user=a"); o.status != 0 || o.fcalls != 1 {
		t.Fatalf("deep 5 more: %+v; want admitted by Redis", o)
	}
}

// cluster_mode: a rule's call keys share its tag's slot, in one call per
// rule.
func TestClusterModeCallKeysOneSlot(t *testing.T) {
	h := toolsHost(t, `,"cluster_mode":true`, 100, nil)
	var calls []string
	for i := range 20 {
		calls = append(calls, toolMsg(i, "tool-"+strconv.Itoa(i)))
	}
	if o := h.sendCalls(jsonArray(calls...), "x-user=alice"); o.status != 400 || o.fcalls != 0 {
		t.Fatalf("20 tools: %+v; want 400 (max_keys 16)", o)
	}
	o := h.sendCalls(jsonArray(calls[:16]...), "x-user=alice")
	if o.status != 0 || o.fcalls != 1 || len(o.keys) != 16 {
		t.Fatalf("%+v; want one call of 16 keys", o)
	}
	slot := clusterslot.Slot(h.plugin.cfg.Redis.Prefix + o.keys[0])
	for _, k := range o.keys {
		if clusterslot.Slot(h.plugin.cfg.Redis.Prefix+k) != slot {
			t.Fatalf("%s: slot %d, want %d", k, clusterslot.Slot(k), slot)
		}
	}
	if clusterslot.Slot(h.plugin.cfg.Redis.Prefix+"{tools|alice}") != slot {
		t.Fatal("the call keys are not in the request parts' slot")
	}
}

// The largest batch a request may carry, 64 limit states, is decided by
// Redis and its reply read (the reply decoder took 3 + 8*8 integers).
func TestLargestBatchDecided(t *testing.T) {
	h := rpcHost(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"t","manual_block":false,"key":[{"source":"header","name":"x-user"}],
		"limits":[{"algorithm":"sliding_log","limit":5,"window":"1h"}]}]}`,
		map[string]rpcSpec{"t": {j: config.JSONRPC{MaxKeys: config.MaxCallKeys}, callParts: []string{"params.name"}}})
	var calls []string
	for i := range config.MaxBatchStates {
		calls = append(calls, toolMsg(i, "t"+strconv.Itoa(i)))
	}
	for i, want := range []int{0, 0, 0, 0, 0, 429} {
		o := h.sendCalls(jsonArray(calls...), "x-user=a")
		if o.status != want || len(o.keys) != 64 || h.Counters["ratelimit.redis.errors"] != 0 {
			t.Fatalf("batch %d: %d keys, status %d %s; want %d (%v)", i, len(o.keys), o.status, o.body, want, h.logs)
		}
	}
}

// A body a jsonrpc rule cannot read as calls (more than its max_calls,
// not JSON-RPC, a call's field given in two cases) is unreadable: under
// on_unreadable_body deny it is refused, nothing called.
func TestUnreadableCalls(t *testing.T) {
	h := toolsHost(t, "", 100, func(sp *rpcSpec) { sp.j.MaxCalls = 2 })
	for _, c := range []struct {
		body, why string
		status    int
	}{
		{jsonArray(toolMsg(1, "a"), toolMsg(2, "b"), toolMsg(3, "c")), "more than max_calls calls", 413},
		{`[1]`, "not a JSON-RPC request", 400},
		{`[]`, "not a JSON-RPC request", 400},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","Name":"b"}}`, "only in case", 400},
	} {
		o := h.sendCalls(c.body, "x-user=u")
		if o.status != c.status || o.fcalls != 0 || !strings.Contains(o.body, `"error":"unreadable_body"`) || !strings.Contains(o.body, c.why) {
			t.Errorf("%s: %+v; want %d, unreadable (%s), no call", c.body, o, c.status, c.why)
		}
	}
	if o := h.sendCalls("", "x-user=u"); o.status != 0 || o.fcalls != 0 {
		t.Errorf("no body: %+v; want admitted, no calls to charge", o)
	}
}

// failure_mode local decides a batch's call of 64 keys in the VM.
func TestLocalFallbackDecidesLargestBatch(t *testing.T) {
	h := rpcHost(t, `{"redis":{"cluster":"redis"},"failure_mode":"local","local_fallback":{"share":1},"rules":[{"name":"t","manual_block":false,
		"key":[{"source":"header","name":"x-user"}],"limits":[{"algorithm":"sliding_log","limit":2,"window":"1h"}]}]}`,
		map[string]rpcSpec{"t": {j: config.JSONRPC{MaxKeys: config.MaxCallKeys}, callParts: []string{"params.name"}}})
	h.Down = true
	var calls []string
	for i := range config.MaxBatchStates {
		calls = append(calls, toolMsg(i, "t"+strconv.Itoa(i)))
	}
	for i, want := range []int{0, 0, 429} {
		if o := h.sendCalls(jsonArray(calls...), "x-user=a"); o.status != want || len(o.keys) != 64 && want == 0 {
			t.Fatalf("batch %d: %d keys, status %d %s; want %d", i, len(o.keys), o.status, o.body, want)
		}
	}
	if got := h.Counters["ratelimit.failure_mode.local_allowed"]; got != 2 {
		t.Fatalf("local_allowed %d, want 2", got)
	}
	if o := h.sendCalls(jsonArray(toolMsg(1, "other")), "x-user=a"); o.status != 0 {
		t.Fatalf("another tool: %+v; want admitted", o)
	}
}

// The filter's key of a call equals keyspace.RuleKey's for the same
// parts, in configured order: what ratelimitctl names.
func TestCallKeyAgreesWithKeyspace(t *testing.T) {
	h := toolsHost(t, "", 100, nil)
	o := h.sendCalls(toolMsg(1, "web search"), "x-user=al|ce")
	cfg := h.plugin.cfg
	base, err := keyspace.RuleKey(cfg, &cfg.Rules[0], []string{"al|ce", "web search"})
	if err != nil || len(o.keys) != 1 || cfg.Redis.Prefix+o.keys[0] != base {
		t.Fatalf("filter %q, keyspace %q %v", o.keys, base, err)
	}
}

// The MCP fixture, parsed: each rule charges its own keys in the one
// call, in rule order; a tool's formula reads its call's arguments.
func TestParsedMCPRules(t *testing.T) {
	conf, err := os.ReadFile("config/testdata/valid/jsonrpc-mcp-tools.json")
	if err != nil {
		t.Fatal(err)
	}
	h := newFakeHost(t, string(conf))
	body := jsonArray(reqMsg(1, "ping", ""), toolMsg(2, "search"), toolMsg(3, "deep_research"),
		reqMsg(4, "tools/call", `{"name":"list_files","arguments":{"limit":35}}`), noteMsg("notifications/initialized"), toolMsg(5, "search"))
	o := h.sendCalls(body, ":path=/mcp", "x-user=alice", "mcp-session-id=s1")
	want := []string{"{user-tools|alice}|search}", "{user-tools|alice}|deep_research}", "{user-tools|alice}|list_files}",
		"{deep-research|alice}", "{session|s1}"}
	if o.status != 0 || o.fcalls != 1 || !slices.Equal(o.keys, want) || !slices.Equal(o.costs, []int64{2, 1, 1, 1, 11}) {
		t.Fatalf("%+v; want one call charging %q 2, 1, 1, 1, 11", o, want)
	}
	// Three rules read the body: its calls are read, and counted, once.
	if c, b := h.Counters["ratelimit.jsonrpc.calls"], h.Counters["ratelimit.jsonrpc.batches"]; c != 6 || b != 1 {
		t.Fatalf("metrics: calls %d, batches %d; want 6, 1: once per request", c, b)
	}
}

// A shadow jsonrpc rule never refuses: a name its table refuses, or too
// many keys, is counted as would_deny and charges nothing for the rule.
func TestShadowCallRule(t *testing.T) {
	h := toolsHost(t, "", 100, func(sp *rpcSpec) { sp.refuse, sp.j.MaxKeys = true, 1 })
	h.plugin.cfg.Rules[0].Shadow = true
	for i, body := range []string{jsonArray(toolMsg(1, "search"), toolMsg(2, "nope")), jsonArray(toolMsg(1, "search"), toolMsg(2, "deep"))} {
		if o := h.sendCalls(body, "x-user=u"); o.status != 0 || o.fcalls != 0 {
			t.Fatalf("%s: %+v; want admitted, no call", body, o)
		}
		if got := h.Counters["ratelimit.rule.tools.would_deny"]; got != uint64(i+1) {
			t.Fatalf("would_deny %d, want %d", got, i+1)
		}
	}
	if o := h.sendCalls(jsonArray(toolMsg(1, "search"), toolMsg(2, "search")), "x-user=u"); o.status != 0 || !slices.Equal(o.costs, []int64{4}) {
		t.Fatalf("%+v; want the shadow call charging search 4", o)
	}
}

// A key whose summed cost is above a limit's capacity refuses the batch
// at once, cost_exceeds_capacity naming the key's first call, before any
// call to Redis; under a shadow rule it is counted as would_deny and
// charges nothing. No single call is over capacity: only the sum is.
func TestBatchKeyOverCapacity(t *testing.T) {
	body := jsonArray(toolMsg(1, "search"), toolMsg(2, "deep"), toolMsg(3, "search"), toolMsg(4, "deep"))
	h := toolsHost(t, "", 9, nil) // deep: 5 + 5 > 9
	if o := h.sendCalls(body, "x-user=u"); o.status != 400 || o.fcalls != 0 ||
		!strings.Contains(o.body, `"error":"cost_exceeds_capacity"`) || !strings.Contains(o.body, `"call":1`) {
		t.Fatalf("%+v; want 400 cost_exceeds_capacity at call 1 (deep's first), no call", o)
	}
	if got := h.Counters["ratelimit.rule.tools.denied"]; got != 1 {
		t.Fatalf("denied %d; want 1", got)
	}
	if o := h.sendCalls(jsonArray(toolMsg(1, "search"), toolMsg(2, "deep")), "x-user=u"); o.status != 0 || !slices.Equal(o.costs, []int64{2, 5}) {
		t.Fatalf("%+v; want the batch within capacity admitted", o)
	}
	h = toolsHost(t, "", 9, nil)
	h.plugin.cfg.Rules[0].Shadow = true
	if o := h.sendCalls(body, "x-user=u"); o.status != 0 || o.fcalls != 0 {
		t.Fatalf("shadow: %+v; want admitted, no call", o)
	}
	if got := h.Counters["ratelimit.rule.tools.would_deny"]; got != 1 {
		t.Fatalf("shadow: would_deny %d; want 1", got)
	}
}
