package config

import (
	"slices"
	"strings"
	"testing"
)

// rpcConfig is a configuration of one rule on /rpc with the given jsonrpc
// object and extra fields (",..." or "").
func rpcConfig(jsonrpc, extra string) string {
	return `{"redis":{"cluster":"redis"},"rules":[{"name":"rpc","match":{"path":"/rpc"},"key":[{"source":"header","name":"x-user"}],` +
		`"jsonrpc":` + jsonrpc + `,"limits":[{"algorithm":"token_bucket","capacity":600,"refill":60,"period":"1s"}]` + extra + `}]}`
}

func parseRule0(t *testing.T, data string) *Rule {
	t.Helper()
	c, err := Parse([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return &c.Rules[0]
}

// Defaults differ by protocol: mcp leaves initialize, ping and
// notifications/* free and refuses in JSON-RPC; plain JSON-RPC charges
// every method and refuses in HTTP.
func TestJSONRPCDefaults(t *testing.T) {
	r := parseRule0(t, rpcConfig(`{}`, ""))
	j := r.JSONRPC
	if j.Protocol != ProtocolJSONRPC || j.MaxCalls != DefaultMaxCalls || j.MaxKeys != DefaultMaxCallKeys || len(j.Free) != 0 ||
		j.Refusal != RefusalHTTP || j.ErrorCode != DefaultErrorCode {
		t.Fatalf("jsonrpc defaults: %+v", j)
	}
	if !r.ReadsBody() || !r.ReadsRequestBody() || !r.RefusesContent() || r.Cost.Default != 1 || r.Cost.Methods != nil || r.Cost.Tools != nil {
		t.Fatalf("jsonrpc rule: reads body %t, refuses content %t, cost %+v", r.ReadsBody(), r.RefusesContent(), r.Cost)
	}
	if j.IsFree("ping") || j.IsFree("initialize") {
		t.Fatal("plain JSON-RPC leaves nothing free by default")
	}

	m := parseRule0(t, rpcConfig(`{"protocol":"mcp"}`, "")).JSONRPC
	if m.Protocol != ProtocolMCP || !slices.Equal(m.Free, MCPFree) || m.Refusal != RefusalJSONRPC || m.ErrorCode != DefaultErrorCode {
		t.Fatalf("mcp defaults: %+v", m)
	}
	for name, free := range map[string]bool{"initialize": true, "ping": true, "notifications/initialized": true, "tools/call": false, "pingx": false} {
		if m.IsFree(name) != free {
			t.Errorf("mcp: IsFree(%q) = %t", name, !free)
		}
	}
	m = parseRule0(t, rpcConfig(`{"protocol":"mcp","free":[],"refusal":"http","max_calls":1,"max_keys":64}`, "")).JSONRPC
	if len(m.Free) != 0 || m.Free == nil || m.Refusal != RefusalHTTP || m.MaxCalls != 1 || m.MaxKeys != 64 {
		t.Fatalf("mcp, set: %+v", m)
	}
	m = parseRule0(t, rpcConfig(`{"refusal":"jsonrpc","error_code":-32099}`, "")).JSONRPC
	if m.Refusal != RefusalJSONRPC || m.ErrorCode != -32099 {
		t.Fatalf("error_code: %+v", m)
	}
	// A rule without jsonrpc is as before.
	plain := parseRule0(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"p","key":[{"source":"client_ip"}],"limits":[{"algorithm":"sliding_log","limit":5,"window":"1s"}]}]}`)
	if plain.JSONRPC != nil || plain.ReadsBody() || plain.RefusesContent() || plain.HasCallParts() {
		t.Fatalf("plain rule: %+v", plain)
	}
}

// A parsed table answers Cost for an exact name, the longest prefix, the
// default, a refusal and a formula; both tables share the default.
func TestJSONRPCCostTables(t *testing.T) {
	r := parseRule0(t, rpcConfig(`{"protocol":"mcp"}`, `,"cost":{"methods":{"eth_call":26,"eth_get*":20,"eth_getLogs":`+
		`{"param":"params.0.toBlock","minus":"params.0.fromBlock","base":60,"per":1,"every":100,"min":60,"max":600},"eth_*":3},`+
		`"tools":{"deep_research":5,"*":1},"default":"refuse"}`))
	m, tools := r.Cost.Methods, r.Cost.Tools
	if m == nil || tools == nil || !m.Refuse || !tools.Refuse || m.Dearest != 600 || tools.Dearest != 5 {
		t.Fatalf("tables: %+v %+v", m, tools)
	}
	logs := `{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"fromBlock":"0x64","toBlock":2600}]}`
	for _, c := range []struct {
		name, call string
		units      int64
		refused    bool
	}{
		{"eth_call", `{}`, 26, false},
		{"eth_getBalance", `{}`, 20, false}, // eth_get* is longer than eth_*
		{"eth_chainId", `{}`, 3, false},
		{"net_version", `{}`, 0, true},
		{"eth_getLogs", logs, 85, false}, // 60 + ceil(2500 / 100)
		{"eth_getLogs", `{"params":[{"toBlock":"latest"}]}`, 600, false},
	} {
		units, refused := m.Cost(c.name, c.call)
		if units != c.units || refused != c.refused {
			t.Errorf("methods.Cost(%q, %s) = %d, %t; want %d, %t", c.name, c.call, units, refused, c.units, c.refused)
		}
	}
	if u, refused := tools.Cost("deep_research", `{}`); u != 5 || refused {
		t.Errorf("tools deep_research: %d %t", u, refused)
	}
	if u, refused := tools.Cost("search", `{}`); u != 1 || refused {
		t.Errorf("tools *: %d %t", u, refused)
	}

	// Only methods set: tools is there, lists nothing, and shares the default.
	r = parseRule0(t, rpcConfig(`{}`, `,"cost":{"methods":{"eth_call":26},"default":2}`))
	if r.Cost.Tools == nil || len(r.Cost.Tools.Names) != 0 || r.Cost.Default != 2 {
		t.Fatalf("tools absent: %+v", r.Cost)
	}
	if u, refused := r.Cost.Tools.Cost("anything", `{}`); u != 2 || refused {
		t.Errorf("tools default: %d %t", u, refused)
	}
	if u, refused := r.Cost.Methods.Cost("eth_blockNumber", `{}`); u != 2 || refused || r.Cost.Methods.Dearest != 26 {
		t.Errorf("methods default: %d %t, dearest %d", u, refused, r.Cost.Methods.Dearest)
	}
	// A number is every call's cost, without tables.
	r = parseRule0(t, rpcConfig(`{}`, `,"cost":3`))
	if r.Cost.Default != 3 || r.Cost.Methods != nil {
		t.Fatalf("number cost: %+v", r.Cost)
	}
}

// A jsonrpc rule keys calls by source call, matches them by match.call,
// and refuses what decides one request at a time.
func TestJSONRPCKeysAndExclusions(t *testing.T) {
	r := parseRule0(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"t","match":{"call":[{"path":"method","exact":"tools/call"},{"path":"params.name","prefix":"deep_"}]},`+
		`"key":[{"source":"header","name":"x-user"},{"source":"call","path":"params.name"}],"jsonrpc":{"protocol":"mcp","max_keys":4},`+
		`"limits":[{"algorithm":"sliding_log","limit":10,"window":"1h"}]}]}`)
	if !r.HasCallParts() || r.Key[1].Source != SourceCall || r.Key[1].BodyPath != "params.name" || r.Key[1].Describe() != "call params.name" {
		t.Fatalf("call part: %+v", r.Key[1])
	}
	if len(r.Match.Call) != 2 || r.Match.Call[0] != (HeaderMatch{Name: "method", Op: HeaderExact, Value: "tools/call"}) || r.Match.Call[1].Op != HeaderPrefix {
		t.Fatalf("match.call: %+v", r.Match.Call)
	}
	if r.BatchStates() != 4*2 {
		t.Fatalf("batch states %d, want 4 keys x (1 limit + block)", r.BatchStates())
	}
	// Without call parts, every call shares the request's one key.
	if r := parseRule0(t, rpcConfig(`{"max_keys":64}`, `,"manual_block":false`)); r.BatchStates() != 1 {
		t.Fatalf("batch states %d without call parts", r.BatchStates())
	}
	const why = ": not with jsonrpc: a batch has many keys"
	noLimits := strings.Replace(rpcConfig(`{}`, ""), `,"limits":[{"algorithm":"token_bucket","capacity":600,"refill":60,"period":"1s"}]`, "", 1)
	callWithout := strings.Replace(strings.Replace(rpcConfig(`{}`, ""), `"jsonrpc":{},`, "", 1),
		`{"source":"header","name":"x-user"}`, `{"source":"call","path":"method"}`, 1)
	for _, c := range []struct{ data, want string }{
		{rpcConfig(`{}`, `,"lease":{}`), "rules[0].lease" + why},
		{rpcConfig(`{}`, `,"throttle":{}`), "rules[0].throttle" + why},
		{rpcConfig(`{}`, `,"response_cost":{"header":"x-used"}`), "rules[0].response_cost" + why},
		{rpcConfig(`{}`, `,"on_limit":{"action":"degrade"}`), "rules[0].on_limit.action" + why},
		{rpcConfig(`{}`, `,"overrides":true`), "rules[0].overrides" + why},
		{strings.Replace(noLimits, `}]}`, `,"limits":[{"algorithm":"sliding_log","limit":5,"window":"1s"},{"algorithm":"concurrency","limit":5,"max_duration":"1m"}]}]}`, 1),
			"rules[0].limits[1].algorithm" + why},
		{rpcConfig(`{}`, `,"cost":{"header":"x-cost"}`), "rules[0].cost.header: not with jsonrpc: a call's cost comes from cost.methods, cost.tools or cost.default"},
		{rpcConfig(`{"protocol":"mcp","refusal":"http","error_code":-32000}`, ""), "rules[0].jsonrpc.error_code: only with refusal: jsonrpc"},
		{callWithout, "rules[0].key[0].source: call is only for a rule with jsonrpc"},
	} {
		if _, err := Parse([]byte(c.data)); err == nil || err.Error() != c.want {
			t.Errorf("got  %v\nwant %s", err, c.want)
		}
	}
	// on_limit deny and manual_block stay allowed.
	parseRule0(t, rpcConfig(`{}`, `,"on_limit":{"action":"deny"},"manual_block":false,"overrides":false,"shadow":true`))
}

// The quota endpoint shows a jsonrpc rule without call parts, and by
// default leaves out one with call parts, which it cannot name.
func TestQuotaEndpointJSONRPC(t *testing.T) {
	c, err := Parse([]byte(`{"redis":{"cluster":"redis"},"quota_endpoint":{"path":"/quota"},"rules":[
		{"name":"calls","key":[{"source":"header","name":"x-user"},{"source":"call","path":"params.name"}],"jsonrpc":{},"limits":[{"algorithm":"sliding_log","limit":5,"window":"1s"}]},
		{"name":"budget","key":[{"source":"header","name":"x-user"}],"jsonrpc":{},"limits":[{"algorithm":"sliding_log","limit":5,"window":"1s"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Quota.Rules, []int{1}) {
		t.Fatalf("quota rules %v, want [1]", c.Quota.Rules)
	}
}
