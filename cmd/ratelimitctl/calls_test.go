package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter"
	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
)

// callRules has a jsonrpc rule keyed by the user and each call's tool.
const callRules = `[{"name":"tools","key":[{"source":"header","name":"x-user"},{"source":"call","path":"params.name"}],
	"jsonrpc":{"protocol":"mcp","refusal":"http"},"limits":[{"name":"hour","algorithm":"sliding_log","limit":3,"window":"1h"}]},
	{"name":"any","key":[{"source":"call","path":"params.name"}],"jsonrpc":{"protocol":"mcp","refusal":"http"},
	 "limits":[{"algorithm":"sliding_log","limit":100,"window":"1h"}]}]`

// postCalls posts a JSON-RPC body as alice and returns the status.
func (p *proxy) postCalls(t *testing.T, body string) int {
	t.Helper()
	s := filtertest.NewStream("127.0.0.1:40000", nil)
	st := p.plugin.NewStream(s)
	defer st.OnDone()
	st.SetBodyFollows(true)
	st.OnRequestHeaders([][2]string{{":method", "POST"}, {":path", "/mcp"}, {":authority", "mcp"}, {"x-user", "alice"}})
	if st.WantsRequestBody() && st.OnRequestBody([]byte(body)) == filter.Pause {
		p.Pump()
	}
	return s.Status
}

// show, reset, block and list name a call-keyed rule's keys by its parts
// in configured order (the request's, then the call's), as the filter
// keys each call: "<prefix>{tools|alice}|search}".
func TestCallKeyedRule(t *testing.T) {
	t.Parallel()
	e := newEnv(t, callRules)
	p := newProxy(t, e)
	call := func(tool string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `"}}`
	}
	if status := p.postCalls(t, "["+call("search")+","+call("fetch")+","+call("search")+"]"); status != 0 {
		t.Fatalf("batch: status %d", status)
	}
	search := e.key("tools", "alice", "search")
	if want := e.prefix + "{tools|alice}|search}"; search != want {
		t.Fatalf("key %q, want %q", search, want)
	}
	var sh shown
	e.json(&sh, "show", "--rule", "tools", "alice", "search")
	checkLimits(t, "search", sh.Limits, limitShown{Name: "hour", Algorithm: "sliding_log", Limit: 3, Used: 2})
	if sh.Key != search || !slices.Equal(sh.Parts, []string{"alice", "search"}) {
		t.Fatalf("show: %+v", sh)
	}
	e.json(&sh, "show", "--rule", "tools", "alice", "fetch")
	checkLimits(t, "fetch", sh.Limits, limitShown{Name: "hour", Algorithm: "sliding_log", Limit: 3, Used: 1})

	var l listed
	e.json(&l, "list", "--rule", "tools")
	var parts []string
	for _, k := range l.Keys {
		var ps []string
		for _, p := range k.Parts {
			ps = append(ps, p.Value)
		}
		parts = append(parts, k.Rule+" "+strings.Join(ps, " "))
	}
	if !slices.Equal(parts, []string{"tools alice fetch", "tools alice search"}) {
		t.Fatalf("list: %q", parts)
	}
	e.json(&l, "list", "--rule", "any") // keyed by call parts alone: "{any}|search}"
	if len(l.Keys) != 2 || l.Keys[1].Key != e.key("any", "search") || l.Keys[1].Parts[0].Value != "search" {
		t.Fatalf("list --rule any: %+v", l.Keys)
	}

	e.ok("reset", "--rule", "tools", "alice", "search")
	e.json(&sh, "show", "--rule", "tools", "alice", "search")
	checkLimits(t, "search after reset", sh.Limits, limitShown{Name: "hour", Algorithm: "sliding_log", Limit: 3, Used: 0})
	e.json(&sh, "show", "--rule", "tools", "alice", "fetch")
	checkLimits(t, "fetch after search's reset", sh.Limits, limitShown{Name: "hour", Algorithm: "sliding_log", Limit: 3, Used: 1})

	e.ok("block", "--rule", "tools", "alice", "fetch")
	if !e.exists(keyspace.BlockKey(e.key("tools", "alice", "fetch"))) {
		t.Fatal("block set no block key")
	}
	if status := p.postCalls(t, call("fetch")); status != 429 {
		t.Fatalf("a blocked tool: status %d, want 429", status)
	}
	if status := p.postCalls(t, call("search")); status != 0 {
		t.Fatalf("another tool: status %d, want admitted", status)
	}
}

// A rule whose call part comes first in its key: show takes the parts in
// configured order (tool, then user), while the key, and list, hold the
// request's part first: "<prefix>{late|alice}|search}".
func TestCallPartFirstInConfig(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `[{"name":"late","key":[{"source":"call","path":"params.name"},{"source":"header","name":"x-user"}],
		"jsonrpc":{"protocol":"mcp","refusal":"http"},"limits":[{"name":"hour","algorithm":"sliding_log","limit":3,"window":"1h"}]}]`)
	p := newProxy(t, e)
	call := func(tool string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `"}}`
	}
	if status := p.postCalls(t, "["+call("search")+","+call("search")+","+call("fetch")+"]"); status != 0 {
		t.Fatalf("batch: status %d", status)
	}
	want := e.prefix + "{late|alice}|search}"
	if got := e.key("late", "search", "alice"); got != want {
		t.Fatalf("key %q, want %q", got, want)
	}
	var sh shown
	e.json(&sh, "show", "--rule", "late", "search", "alice")
	checkLimits(t, "search", sh.Limits, limitShown{Name: "hour", Algorithm: "sliding_log", Limit: 3, Used: 2})
	if sh.Key != want {
		t.Fatalf("show: %+v; want key %q", sh, want)
	}
	var l listed
	e.json(&l, "list", "--rule", "late")
	var parts []string
	for _, k := range l.Keys {
		var ps []string
		for _, p := range k.Parts {
			ps = append(ps, p.Value)
		}
		parts = append(parts, strings.Join(ps, " "))
	}
	if !slices.Equal(parts, []string{"alice fetch", "alice search"}) {
		t.Fatalf("list: %q; want the request's part first, as the key holds it", parts)
	}
}
