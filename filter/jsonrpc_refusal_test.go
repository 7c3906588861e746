package filter

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
	"github.com/redisrate/envoy-redis-ratelimit/filter/jsonrpc"
	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
)

// rpcRules: "tools" answers in the JSON-RPC form, "tools-http" in the HTTP
// form, the default of protocol jsonrpc.
const rpcRules = `{"redis":{"cluster":"redis"},"headers":"both","rules":[
	{"name":"tools","key":[{"source":"header","name":"x-user"},{"source":"call","path":"params.name"}],
	 "jsonrpc":{"max_calls":3,"max_keys":2,"refusal":"jsonrpc"},
	 "limits":[{"name":"per-hour","algorithm":"sliding_log","limit":1,"window":"1h"}]},
	{"name":"tools-http","key":[{"source":"header","name":"x-user"},{"source":"call","path":"params.name"}],
	 "jsonrpc":{"max_calls":3,"max_keys":2},
	 "limits":[{"name":"per-hour","algorithm":"sliding_log","limit":1,"window":"1h"}]}]}`

// rpcStream is a stream whose body was read as body's calls, as the
// JSON-RPC step leaves it.
func rpcStream(t *testing.T, h *fakeHost, body string) *Stream {
	t.Helper()
	s := h.plugin.NewStream(filtertest.NewStream("192.0.2.7:40000", nil))
	t.Cleanup(s.OnDone)
	s.req.body = append(s.req.body[:0], body...)
	calls, fault := jsonrpc.Read(body, config.MaxCalls, nil)
	if fault != 0 {
		t.Fatalf("%s: %v", body, fault)
	}
	s.rpc = &rpcState{read: true, calls: calls, batch: jsonrpc.Batch(body)}
	return s
}

const (
	rpcSingle = `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"search"}}`
	// rpcBatch interleaves notifications and a response with requests
	// whose ids are "a", 1.50, null and 2^60, as written.
	rpcBatch = `[{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"search"}},` +
		`{"jsonrpc":"2.0","method":"notifications/progress"},{"jsonrpc":"2.0","id":1.50,"method":"tools/list"},` +
		`{"jsonrpc":"2.0","id":7,"result":{}},{"jsonrpc":"2.0","id":null,"method":"ping"},` +
		`{"jsonrpc":"2.0","id":1152921504606846976,"method":"tools/call","params":{"name":"deep_research"}}]`
	rpcNotes = `[{"jsonrpc":"2.0","method":"notifications/a"},{"jsonrpc":"2.0","id":3,"result":true}]`
	// rpcNoName is a call whose params lack name, the call key part.
	rpcNoName = `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}}]`
)

// A refusal of a jsonrpc rule, per case of the JSON-RPC form's table, and
// in the HTTP form (the second rule): exact bodies and statuses.
func TestRPCRefusalBodies(t *testing.T) {
	h := newFakeHost(t, rpcRules)
	lim := h.plugin.top().cfg.Rules[0].Limits[0].Limit
	limited := func(rule, call int) verdict {
		return verdict{rule: rule, limit: 0, lim: lim, reason: reasonRateLimited, call: call,
			result: algorithms.Result{Limit: 1, RetryAfter: 41250 * time.Millisecond, ResetAfter: time.Hour}}
	}
	const data = `"data":{"reason":"rate_limited","rule":"tools","limit":"per-hour","retry_after":42,"retry_after_ms":41250,"call":5}}}`
	const limitedObj = `"error":{"code":-32005,"message":"Rate limited",` + data
	for _, c := range []struct {
		name, body string
		v          verdict
		status     int
		want       string
	}{
		{"single request", rpcSingle, limited(0, 6), 200, `{"jsonrpc":"2.0","id":"a",` + limitedObj},
		{"batch: one object per id, in order", rpcBatch, limited(0, 6), 200,
			`[{"jsonrpc":"2.0","id":"a",` + limitedObj + `,{"jsonrpc":"2.0","id":1.50,` + limitedObj +
				`,{"jsonrpc":"2.0","id":null,` + limitedObj + `,{"jsonrpc":"2.0","id":1152921504606846976,` + limitedObj + `]`},
		{"only notifications and responses: rejected_status", rpcNotes, limited(0, 6), 429, `{"jsonrpc":"2.0","id":null,` + limitedObj},
		{"blocked", rpcSingle, verdict{rule: 0, limit: -1, reason: reasonBlocked, blocked: true, blockedFor: 90 * time.Second}, 200,
			`{"jsonrpc":"2.0","id":"a","error":{"code":-32005,"message":"Blocked","data":{"reason":"blocked","rule":"tools","retry_after":90,"retry_after_ms":90000}}}`},
		{"unknown method", rpcBatch, verdict{rule: 0, limit: -1, reason: reasonUnknownMethod, call: 3}, 200,
			`[{"jsonrpc":"2.0","id":"a",` + methodObj + `,{"jsonrpc":"2.0","id":1.50,` + methodObj +
				`,{"jsonrpc":"2.0","id":null,` + methodObj + `,{"jsonrpc":"2.0","id":1152921504606846976,` + methodObj + `]`},
		{"unknown method, notifications only: refusal_status", rpcNotes, verdict{rule: 0, limit: -1, reason: reasonUnknownMethod, call: 1}, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"Method not found","data":{"reason":"unknown_method","rule":"tools","method":"notifications/a","call":0}}}`},
		{"unknown tool", rpcSingle, verdict{rule: 0, limit: -1, reason: reasonUnknownTool, call: 1}, 200,
			`{"jsonrpc":"2.0","id":"a","error":{"code":-32602,"message":"Unknown tool","data":{"reason":"unknown_tool","rule":"tools","tool":"search","call":0}}}`},
		{"too many keys", rpcSingle, verdict{rule: 0, limit: -1, reason: reasonTooManyKeys, call: 1}, 200,
			`{"jsonrpc":"2.0","id":"a","error":{"code":-32600,"message":"Invalid Request","data":{"reason":"too_many_keys","rule":"tools","max_keys":2,"call":0}}}`},
		{"missing call part", rpcNoName, verdict{rule: 0, limit: -1, reason: reasonMissingKey, call: 2}, 200,
			`[{"jsonrpc":"2.0","id":1,` + missingObj + `,{"jsonrpc":"2.0","id":2,` + missingObj + `]`},
		{"cost above capacity", rpcSingle, verdict{rule: 0, limit: 0, reason: reasonCostExceedsCapacity, call: 1}, 200,
			`{"jsonrpc":"2.0","id":"a","error":{"code":-32600,"message":"Invalid Request","data":{"reason":"cost_exceeds_capacity","rule":"tools","limit":"per-hour","call":0}}}`},
		{"cost above the local share: rejected_status", rpcNotes, verdict{rule: 0, limit: 0, reason: reasonCostExceedsCapacity, call: 1}, 429,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32005,"message":"Rate limited","data":{"reason":"cost_exceeds_capacity","rule":"tools","call":0}}}`},
		{"unreadable: syntax", rpcSingle, verdict{rule: 0, limit: -1, reason: reasonUnreadableBody, body: jsonbound.RefuseSyntax}, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":{"reason":"not JSON or truncated","rule":"tools"}}}`},
		{"unreadable: not JSON-RPC", rpcSingle, verdict{rule: 0, limit: -1, reason: reasonUnreadableBody, body: jsonbound.RefuseNotJSONRPC}, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request","data":{"reason":"not a JSON-RPC request","rule":"tools"}}}`},
		{"unreadable: too many calls", rpcBatch, verdict{rule: 0, limit: -1, reason: reasonUnreadableBody, body: jsonbound.RefuseTooManyCalls}, 413,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request","data":{"reason":"more than max_calls calls","rule":"tools"}}}`},
		{"unreadable: too large", rpcSingle, verdict{rule: 0, limit: -1, reason: reasonUnreadableBody, body: jsonbound.RefuseTooLarge}, 413,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request","data":{"reason":"larger than max_request_body_bytes","rule":"tools"}}}`},
		{"an outage keeps the HTTP form", rpcSingle, verdict{rule: -1, limit: -1, reason: reasonUnavailable}, 503,
			`{"error":"ratelimit_unavailable"}` + "\n"},

		{"HTTP form: rate limited", rpcBatch, limited(1, 6), 429,
			`{"error":"rate_limited","rule":"tools-http","limit":"per-hour","call":5,"retry_after":42}` + "\n"},
		{"HTTP form: unknown method", rpcBatch, verdict{rule: 1, limit: -1, reason: reasonUnknownMethod, call: 3}, 400,
			`{"error":"unknown_method","rule":"tools-http","method":"tools/list","call":2}` + "\n"},
		{"HTTP form: unknown tool", rpcBatch, verdict{rule: 1, limit: -1, reason: reasonUnknownTool, call: 6}, 400,
			`{"error":"unknown_tool","rule":"tools-http","tool":"deep_research","call":5}` + "\n"},
		{"HTTP form: a method not printable ASCII is left out", `{"jsonrpc":"2.0","id":1,"method":"caf\u00e9"}`,
			verdict{rule: 1, limit: -1, reason: reasonUnknownMethod, call: 1}, 400, `{"error":"unknown_method","rule":"tools-http","call":0}` + "\n"},
		{"HTTP form: a tool name past 128 bytes is left out", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + strings.Repeat("t", maxModelShown+1) + `"}}`,
			verdict{rule: 1, limit: -1, reason: reasonUnknownTool, call: 1}, 400, `{"error":"unknown_tool","rule":"tools-http","call":0}` + "\n"},
		{"HTTP form: too many keys", rpcBatch, verdict{rule: 1, limit: -1, reason: reasonTooManyKeys, call: 6}, 400,
			`{"error":"too_many_keys","rule":"tools-http","max_keys":2,"call":5}` + "\n"},
		{"HTTP form: missing call part", rpcNoName, verdict{rule: 1, limit: -1, reason: reasonMissingKey, call: 2}, 400,
			`{"error":"missing_key","rule":"tools-http","part":"call params.name","call":1}` + "\n"},
		{"HTTP form: missing request part", rpcNoName, verdict{rule: 1, limit: -1, reason: reasonMissingKey}, 400,
			`{"error":"missing_key","rule":"tools-http","part":"header x-user"}` + "\n"},
		{"HTTP form: too many calls", rpcBatch, verdict{rule: 1, limit: -1, reason: reasonUnreadableBody, body: jsonbound.RefuseTooManyCalls}, 413,
			`{"error":"unreadable_body","rule":"tools-http","reason":"more than max_calls calls"}` + "\n"},
		{"HTTP form: not JSON-RPC", rpcBatch, verdict{rule: 1, limit: -1, reason: reasonUnreadableBody, body: jsonbound.RefuseNotJSONRPC}, 400,
			`{"error":"unreadable_body","rule":"tools-http","reason":"not a JSON-RPC request"}` + "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := rpcStream(t, h, c.body)
			s.local = strings.Contains(c.name, "local")
			status, headers, body := s.render(&c.v)
			if status != c.status || string(body) != c.want {
				t.Errorf("%d %s\nwant %d %s", status, body, c.status, c.want)
			}
			if !json.Valid(body) {
				t.Errorf("%s is not JSON", body)
			}
			if c.v.rule == 0 && (body[0] == '[') != (jsonrpc.Batch(c.body) && status == 200) {
				t.Errorf("%s: an array answers a batch with ids, only", body)
			}
			want := []string{"content-type"}
			if c.v.reason == reasonRateLimited {
				want = []string{"retry-after", "ratelimit-policy", "ratelimit", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "content-type"}
			} else if c.v.blocked {
				want = []string{"retry-after", "content-type"}
			}
			if names := headerNames(headers); strings.Join(names, " ") != strings.Join(want, " ") {
				t.Errorf("headers %v; want %v, as any refusal's", headers, want)
			}
		})
	}
}

const (
	methodObj  = `"error":{"code":-32601,"message":"Method not found","data":{"reason":"unknown_method","rule":"tools","method":"tools/list","call":2}}}`
	missingObj = `"error":{"code":-32600,"message":"Invalid Request","data":{"reason":"missing_key","rule":"tools","part":"call params.name","call":1}}}`
)

func headerNames(h [][2]string) []string {
	names := make([]string, len(h))
	for i := range h {
		names[i] = h[i][0]
	}
	return names
}

// The ids of a JSON-RPC answer, as encoding/json reads them, are the
// request's ids in order, and it says the same for every one.
func TestRPCRefusalIDsInOrder(t *testing.T) {
	h := newFakeHost(t, rpcRules)
	s := rpcStream(t, h, rpcBatch)
	v := verdict{rule: 0, limit: -1, reason: reasonBlocked, blocked: true, blockedFor: 1500 * time.Millisecond}
	_, _, body := s.render(&v)
	var got []struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code int
			Data struct {
				RetryAfter   int64 `json:"retry_after"`
				RetryAfterMs int64 `json:"retry_after_ms"`
			}
		}
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	var ids []string
	for _, o := range got {
		ids = append(ids, string(o.ID))
		if o.Error.Code != -32005 || o.Error.Data.RetryAfter != 2 || o.Error.Data.RetryAfterMs != 1500 {
			t.Errorf("%+v; want -32005, retry after 2 s, 1500 ms", o.Error)
		}
	}
	if strings.Join(ids, " ") != `"a" 1.50 null 1152921504606846976` {
		t.Errorf("ids %v", ids)
	}
}

// sendRPC runs a POST to /mcp whose body is body through the filter.
func (h *fakeHost) sendRPC(body string) *filtertest.Stream {
	h.t.Helper()
	fs := filtertest.NewStream("192.0.2.7:40000", nil)
	st := h.plugin.NewStream(fs)
	defer st.OnDone()
	st.SetBodyFollows(true)
	st.OnRequestHeaders([][2]string{{":method", "POST"}, {":path", "/mcp"}, {":authority", "mcp"}, {"x-user", "alice"}})
	if st.WantsRequestBody() {
		st.OnRequestBody([]byte(body))
	}
	h.Pump()
	return fs
}

// rpcAnswer is a JSON-RPC error answer as encoding/json reads it: its
// ids, and each object's code and retry times.
func rpcAnswer(t *testing.T, body string) (ids []string) {
	t.Helper()
	type object struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code int
			Data struct {
				RetryAfter   int64 `json:"retry_after"`
				RetryAfterMs int64 `json:"retry_after_ms"`
			}
		}
	}
	var objects []object
	if strings.HasPrefix(body, "[") {
		if err := json.Unmarshal([]byte(body), &objects); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
	} else {
		objects = make([]object, 1)
		if err := json.Unmarshal([]byte(body), &objects[0]); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
	}
	for _, o := range objects {
		d := o.Error.Data
		if o.JSONRPC != "2.0" || o.Error.Code != -32005 || d.RetryAfter < 1 || d.RetryAfterMs > d.RetryAfter*1000 || d.RetryAfterMs <= (d.RetryAfter-1)*1000 {
			t.Errorf("%s: want -32005 and retry_after_ms within retry_after's second", body)
		}
		ids = append(ids, string(o.ID))
	}
	return ids
}

// A denial of a jsonrpc rule through Redis, then from the deny cache (each
// body within the limit's capacity): each request gets its own ids (the cached reply's body is not reused), its
// status (200 with ids, else 429), and the rate-limit headers.
func TestRPCRefusalFromDenyCache(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"headers":"both","rules":[
	{"name":"tools","key":[{"source":"header","name":"x-user"}],"jsonrpc":{"refusal":"jsonrpc"},
	 "limits":[{"name":"per-hour","algorithm":"sliding_log","limit":2,"window":"1h"}]}]}`)
	single := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"search"}}`
	}
	for _, id := range []string{`"first"`, `2`} {
		if fs := h.sendRPC(single(id)); fs.Status != 0 || fs.Resumed != 1 {
			t.Fatalf("request %s: %d %s; want admitted", id, fs.Status, fs.Body)
		}
	}
	for _, c := range []struct {
		body, from string
		status     int
		ids        string
	}{
		{single(`"third"`), "", 200, `"third"`},
		{`[{"jsonrpc":"2.0","id":"x","method":"tools/call"},{"jsonrpc":"2.0","id":9,"result":{}},{"jsonrpc":"2.0","id":4.0,"method":"tools/call"}]`,
			" from=deny_cache", 200, `"x" 4.0`},
		{`[{"jsonrpc":"2.0","method":"notifications/n"}]`, " from=deny_cache", 429, `null`},
		{single(`"again"`), " from=deny_cache", 200, `"again"`},
	} {
		fs := h.sendRPC(c.body)
		ids := strings.Join(rpcAnswer(t, fs.Body), " ")
		if fs.Status != c.status || ids != c.ids || fs.Headers["retry-after"] == "" || fs.Headers["ratelimit"] == "" ||
			fs.Decision != "rule=tools limit=per-hour remaining=0 decision=denied reason=rate_limited"+c.from {
			t.Errorf("%s:\n got %d %v %s, told %q\nwant %d, ids %s, retry-after, ratelimit%s", c.body, fs.Status, fs.Headers, fs.Body, fs.Decision, c.status, c.ids, c.from)
		}
	}
}

// Through the JSON-RPC step: an MCP rule (refusal jsonrpc by default)
// refusing a batch's unknown tool names it and its call's index; a body
// that is not JSON is a parse error.
func TestRPCRefusalOfUnknownTool(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[
	{"name":"mcp","key":[{"source":"header","name":"x-user"}],"jsonrpc":{"protocol":"mcp"},
	 "cost":{"tools":{"search":1},"methods":{},"default":"refuse"},
	 "limits":[{"name":"per-hour","algorithm":"sliding_log","limit":10,"window":"1h"}]}]}`)
	for _, c := range []struct {
		body   string
		status int
		want   string
	}{
		{`[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search"}},` +
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope"}}]`, 200,
			`[{"jsonrpc":"2.0","id":1,` + toolObj + `,{"jsonrpc":"2.0","id":2,` + toolObj + `]`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call"`, 400,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":{"reason":"not JSON or truncated","rule":"mcp"}}}`},
	} {
		if fs := h.sendRPC(c.body); fs.Status != c.status || fs.Body != c.want {
			t.Errorf("%s:\n got %d %s\nwant %d %s", c.body, fs.Status, fs.Body, c.status, c.want)
		}
	}
}

const toolObj = `"error":{"code":-32602,"message":"Unknown tool","data":{"reason":"unknown_tool","rule":"mcp","tool":"nope","call":2}}}`
