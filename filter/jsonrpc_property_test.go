package filter

import (
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// rpcPropConfig: two jsonrpc rules and a plain one on /rpc, every limit
// tight enough to bind within the test and slow enough (an hour) that
// the machine's speed decides nothing. rpc charges each method per user
// from a table with a formula; tools (MCP) charges each tool per user;
// plain charges the request. The deny cache is off: every decision the
// filter does not take itself is Redis's.
const rpcPropConfig = `{"redis":{"cluster":"redis"},"deny_cache":{"max_keys":0},"rules":[
 {"name":"rpc","match":{"path":"/rpc"},"key":[{"source":"header","name":"x-user"},{"source":"call","path":"method"}],
  "jsonrpc":{"max_calls":200,"max_keys":12,"free":["ping"]},
  "cost":{"methods":{"eth_call":3,"eth_get*":2,"eth_chainId":0,"debug_*":25,
    "eth_getLogs":{"param":"params.0.toBlock","minus":"params.0.fromBlock","base":4,"per":1,"every":100,"min":4,"max":40}},"default":1},
  "limits":[{"algorithm":"token_bucket","capacity":1500,"refill":1,"period":"1h"}]},
 {"name":"tools","match":{"path":"/rpc","call":[{"path":"method","exact":"tools/call"}]},
  "key":[{"source":"header","name":"x-user"},{"source":"call","path":"params.name"}],"on_missing_key":"deny",
  "jsonrpc":{"protocol":"mcp","max_calls":200,"max_keys":4},
  "cost":{"tools":{"search":1,"deep_research":20,"fetch*":2,"translate":1},"default":"refuse"},
  "limits":[{"algorithm":"sliding_log","limit":60,"window":"1h"}]},
 {"name":"plain","match":{"path":"/rpc"},"key":[{"source":"header","name":"x-user"}],
  "limits":[{"algorithm":"sliding_counter","limit":45,"window":"1h"}]}]}`

// The oracle's reading of rpcPropConfig's rules.
var (
	propRPC = oTable{units: map[string]int64{"eth_call": 3, "eth_get*": 2, "eth_chainId": 0, "debug_*": 25},
		formulas: map[string]oFormula{"eth_getLogs": {param: "params.0.toBlock", minus: "params.0.fromBlock", base: 4, per: 1, every: 100, lo: 4, hi: 40}},
		def:      1}
	propTools = oTable{units: map[string]int64{"search": 1, "deep_research": 20, "fetch*": 2, "translate": 1}, refuse: true}
)

// propExpect is what the oracle says of one request: refused for its
// content (no call), by rule for reason, naming the call of that index
// (-1: none), in the JSON-RPC form when rpcForm; or the one call's keys
// and costs.
type propExpect struct {
	refused bool
	reason  string
	rule    string
	call    int
	rpcForm bool
	charges []oCharge
}

// propOracle is the expected outcome of user's body under rpcPropConfig,
// its rules evaluated in order as the filter does: all of rpc's calls
// (too_many_keys at the call that opens its 13th key), then its keys'
// capacity, then tools' calls (unknown_tool, too_many_keys at a 5th
// key) and capacity.
func propOracle(prefix, user, body string) propExpect {
	calls, _, ok := oracleRead(body)
	if !ok {
		return propExpect{refused: true, reason: "unreadable_body", rule: "rpc", call: -1}
	}
	var rpc, tools []oCharge
	for i, c := range calls {
		if c.kind == oResponse || c.method == "ping" || c.method == "" { // "": the key part missing, skipped
			continue
		}
		units, _ := propRPC.cost(c.method, c.raw)
		if units > 0 {
			if rpc = oMerge(rpc, prefix+"{rpc|"+user+"}|"+oPart(c.method)+"}:0", units, i); len(rpc) > 12 {
				return propExpect{refused: true, reason: "too_many_keys", rule: "rpc", call: i}
			}
		}
	}
	for _, c := range rpc {
		if c.cost > 1500 {
			return propExpect{refused: true, reason: "cost_exceeds_capacity", rule: "rpc", call: c.first}
		}
	}
	for i, c := range calls {
		if c.kind == oResponse || c.method != "tools/call" {
			continue
		}
		name, _ := oString(oLookup(c.raw, "params.name"))
		units, refused := propTools.cost(name, c.raw)
		if refused {
			return propExpect{refused: true, reason: "unknown_tool", rule: "tools", call: i, rpcForm: true}
		}
		if units > 0 {
			if tools = oMerge(tools, prefix+"{tools|"+user+"}|"+oPart(name)+"}:0", units, i); len(tools) > 4 {
				return propExpect{refused: true, reason: "too_many_keys", rule: "tools", call: i, rpcForm: true}
			}
		}
	}
	for _, c := range tools {
		if c.cost > 60 {
			return propExpect{refused: true, reason: "cost_exceeds_capacity", rule: "tools", call: c.first, rpcForm: true}
		}
	}
	all := append(append(rpc, tools...), oCharge{prefix + "{plain|" + user + "}:0", 1, -1})
	return propExpect{charges: all}
}

// rpcFCall is one decide call the filter sent, and Redis's decision.
type rpcFCall struct {
	blocks, keys []string
	costs        []int64
	decision     algorithms.Decision
}

// postBatch posts body as user through the filter and returns the stream
// and the decide calls it made (an epoch read aside).
func (h *fakeHost) postBatch(t *testing.T, user, body string) (*filtertest.Stream, []rpcFCall) {
	t.Helper()
	replies := map[uint32][]byte{}
	h.Deliver = func(id uint32, ok bool, reply []byte) {
		replies[id] = append([]byte(nil), reply...)
		h.plugin.OnRedisReply(id, ok, reply)
	}
	var sent []filtertest.Call
	fs := filtertest.NewStream("192.0.2.7:40000", nil)
	st := h.plugin.NewStream(fs)
	defer st.OnDone()
	st.SetBodyFollows(true)
	st.OnRequestHeaders([][2]string{{":method", "POST"}, {":path", "/rpc"}, {":authority", "rpc"}, {"x-user", user}, {"content-type", "application/json"}})
	if st.WantsRequestBody() {
		st.OnRequestBody([]byte(body))
	}
	for len(h.Queue) > 0 {
		sent = append(sent, h.Queue...)
		queued := len(h.Queue)
		h.Pump()
		if len(h.Queue) >= queued {
			break
		}
	}
	var calls []rpcFCall
	for _, c := range sent {
		v, _, err := redisproto.Decode(c.Cmd)
		if err != nil {
			t.Fatalf("call %d: %v", c.ID, err)
		}
		args := make([]string, len(v.Elems))
		for i, e := range v.Elems {
			args[i] = string(e.Str)
		}
		if len(args) == 5 && args[2] == "1" && args[4] == "e" {
			continue // the epoch read
		}
		calls = append(calls, parseDecide(t, args, replies[c.ID]))
	}
	return fs, calls
}

// parseDecide reads a decide call's blocks, keys and costs,
//
//	FCALL <decide> <numkeys> <blocks...> <keys...> <len(blocks)> <4 args per check>
//
// and the decision from its reply.
func parseDecide(t *testing.T, args []string, reply []byte) rpcFCall {
	t.Helper()
	numkeys, err := strconv.Atoi(args[2])
	if err != nil || 4+numkeys > len(args) {
		t.Fatalf("malformed call %q", args)
	}
	nb, err := strconv.Atoi(args[3+numkeys])
	n := numkeys - nb
	if err != nil || nb < 0 || n < 0 || len(args) != 4+numkeys+4*n {
		t.Fatalf("malformed call %q", args)
	}
	c := rpcFCall{blocks: args[3 : 3+nb], keys: args[3+nb : 3+numkeys]}
	for i := range n {
		cost, err := strconv.ParseInt(args[4+numkeys+4*i+3], 10, 64)
		if err != nil {
			t.Fatalf("malformed cost in %q", args)
		}
		c.costs = append(c.costs, cost)
	}
	v, _, err := redisproto.Decode(reply)
	if err != nil {
		t.Fatalf("reply %q: %v", reply, err)
	}
	if err := c.decision.Parse(v, nb, n); err != nil {
		t.Fatalf("reply %q: %v", reply, err)
	}
	return c
}

// reasonRE finds a refusal's reason in either form's body, ruleRE its
// rule, callRE the call it names.
var (
	reasonRE = regexp.MustCompile(`"reason":"([^"]+)"|"error":"([a-z_]+)"`)
	ruleRE   = regexp.MustCompile(`"rule":"([^"]+)"`)
	callRE   = regexp.MustCompile(`"call":(\d+)`)
)

// refusalNames reads a refusal body's (first object's) reason, rule, and
// the call it names, -1 when none.
func refusalNames(body string) (reason, rule string, call int) {
	if m := reasonRE.FindStringSubmatch(body); m != nil {
		reason = m[1] + m[2]
	}
	if m := ruleRE.FindStringSubmatch(body); m != nil {
		rule = m[1]
	}
	call = -1
	if m := callRE.FindStringSubmatch(body); m != nil {
		call, _ = strconv.Atoi(m[1])
	}
	return reason, rule, call
}

// oracleIDs is the number of requests (calls with an id) in body.
func oracleIDs(body string) (int, bool) {
	calls, _, ok := oracleRead(body)
	n := 0
	for _, c := range calls {
		if c.kind == oRequest {
			n++
		}
	}
	return n, ok
}

// deniedBy reports whether a check of rule, on a key first opened by
// call (-1: none named), is one d denies.
func deniedBy(charges []oCharge, d algorithms.Decision, rule string, call int) bool {
	for i, ch := range charges {
		if i < len(d.Results) && !d.Results[i].Allowed && strings.Contains(ch.key, "{"+rule+"|") && ch.first == call {
			return true
		}
	}
	return false
}

// snapshotLua lists every key under a prefix (SCAN), sorted, each with its
// DUMP: equal snapshots hold equal state.
const snapshotLua = `local keys, cur = {}, "0"
repeat
  local r = redis.call("SCAN", cur, "MATCH", ARGV[1], "COUNT", 1000)
  cur = r[1]
  for _, k in ipairs(r[2]) do keys[#keys + 1] = k end
until cur == "0"
table.sort(keys)
local out = {}
for _, k in ipairs(keys) do out[#out + 1] = k; out[#out + 1] = redis.call("DUMP", k) end
return out`

func snapshot(t *testing.T, prefix string) []string {
	t.Helper()
	v, err := server.Do("EVAL", snapshotLua, 0, prefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range v.([]any) {
		out = append(out, e.(string))
	}
	return out
}

// Batches of 1 to 200 calls over 12 methods and 5 tools (free ones,
// notifications, responses, duplicate members, a formula's params
// absent, hex, decimal, huge or fractional; and a few bodies a rule
// refuses) through two jsonrpc rules and a plain one, against an oracle
// written with encoding/json and the library's Go model: the one call
// holds exactly the oracle's keys, in first-appearance order, each
// charged the sum of its calls' costs; Redis decides as the model does at
// the script's time; the filter admits exactly what Redis admits; a
// refusal names the reason, rule and call the oracle (or Redis's
// decision) says, with its form's status; and a refused batch (by Redis
// or for its content) leaves every key under the prefix as it was.
func TestJSONRPCBatchesMatchModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 33))
	h := newFakeHost(t, rpcPropConfig)
	prefix := h.plugin.cfg.Redis.Prefix
	limits := map[string]algorithms.Limit{}
	for _, rule := range h.plugin.cfg.Rules {
		limits[rule.Name] = rule.Limits[0].Limit
	}
	users := []string{"ann", "bob", "cy", "dee", "eve", "fay", "gus", "hal", "ivy", "jo"}
	model := algorithms.NewModel()
	batches := 500
	if testing.Short() {
		batches = 60
	}
	var admitted, denied, content, bigAdmitted int
	reasons := map[string]int{}
	for b := range batches {
		user := users[r.IntN(len(users))]
		body := genBatch(r)
		want := propOracle(prefix, user, body)
		before := snapshot(t, prefix)
		fs, calls := h.postBatch(t, user, body)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("batch %d (user %s, %d bytes): "+format+"\nbody: %.2000s", append(append([]any{b, user, len(body)}, args...), body)...)
		}
		if want.refused {
			if len(calls) != 0 || fs.Status == 0 || fs.Resumed != 0 {
				fail("sent %d calls, status %d, resumed %d; want refused for its content, no call", len(calls), fs.Status, fs.Resumed)
			}
			if after := snapshot(t, prefix); !slices.Equal(before, after) {
				fail("a batch refused for its content changed Redis")
			}
			checkRPCErrors(t, fs, body)
			content++
			reason, rule, call := refusalNames(fs.Body)
			reasons[reason]++
			status := 400
			if ids, _ := oracleIDs(body); want.rpcForm && ids > 0 {
				status = 200
			}
			if fs.Status != status || reason != want.reason || rule != want.rule || call != want.call {
				fail("refused %d %s; want %d, %s by rule %s at call %d", fs.Status, fs.Body, status, want.reason, want.rule, want.call)
			}
			continue
		}
		if len(calls) != 1 {
			fail("sent %d decide calls; want one (atomic)", len(calls))
		}
		c := calls[0]
		var wantKeys, wantBlocks []string
		var wantCosts []int64
		checks := make([]algorithms.Check, len(want.charges))
		for i, ch := range want.charges {
			wantKeys = append(wantKeys, ch.key)
			wantBlocks = append(wantBlocks, strings.TrimSuffix(ch.key, ":0")+":block")
			wantCosts = append(wantCosts, ch.cost)
			rule := ch.key[len(prefix)+1 : len(prefix)+1+strings.IndexByte(ch.key[len(prefix)+1:], '|')]
			checks[i] = algorithms.Check{Key: ch.key, Limit: limits[rule], Cost: ch.cost}
		}
		if !slices.Equal(c.keys, wantKeys) || !slices.Equal(c.costs, wantCosts) {
			fail("the call charged\n%q %v\nthe oracle wants\n%q %v", c.keys, c.costs, wantKeys, wantCosts)
		}
		if got := slices.Sorted(slices.Values(c.blocks)); !slices.Equal(got, slices.Sorted(slices.Values(wantBlocks))) {
			fail("block keys %q; want %q", c.blocks, wantBlocks)
		}
		blocks := make([]int64, len(c.blocks))
		for i := range blocks {
			blocks[i] = -2
		}
		m := model.Decide(c.decision.Now, blocks, checks)
		if !equalDecision(c.decision, m) {
			fail("Redis decided\n%+v\nthe model\n%+v", c.decision, m)
		}
		switch {
		case m.Allowed() && (fs.Resumed != 1 || fs.Status != 0):
			fail("admitted by Redis, but resumed %d, status %d", fs.Resumed, fs.Status)
		case !m.Allowed() && (fs.Resumed != 0 || fs.Status == 0):
			fail("denied by Redis, but resumed %d, status %d", fs.Resumed, fs.Status)
		case !m.Allowed():
			if after := snapshot(t, prefix); !slices.Equal(before, after) {
				fail("a batch Redis refused changed Redis")
			}
			checkRPCErrors(t, fs, body)
			denied++
			if reason, rule, call := refusalNames(fs.Body); reason != "rate_limited" || !deniedBy(want.charges, m, rule, call) {
				fail("refused %d %s; want rate_limited by a rule and call whose key Redis denied (%+v)", fs.Status, fs.Body, m.Results)
			}
		default:
			admitted++
			if n, _, _ := oracleRead(body); len(n) >= 100 {
				bigAdmitted++
			}
		}
	}
	t.Logf("%d batches: %d admitted (%d of 100 calls or more), %d denied by Redis, %d refused for their content %v",
		batches, admitted, bigAdmitted, denied, content, reasons)
	if admitted == 0 || denied == 0 || content == 0 || bigAdmitted == 0 && !testing.Short() {
		t.Errorf("want every outcome, and a batch of 100 calls or more admitted")
	}
}

// checkRPCErrors checks a refusal in the JSON-RPC form (HTTP 200): one
// error object per request, in order, each with the request's id as
// written; an array for an array.
func checkRPCErrors(t *testing.T, fs *filtertest.Stream, body string) {
	t.Helper()
	if fs.Status != 200 {
		return
	}
	calls, batch, _ := oracleRead(body)
	var ids []string
	for _, c := range calls {
		if c.kind == oRequest {
			ids = append(ids, c.id)
		}
	}
	var objs []map[string]json.RawMessage
	if batch {
		if err := json.Unmarshal([]byte(fs.Body), &objs); err != nil {
			t.Fatalf("refusal body %q: %v", fs.Body, err)
		}
	} else {
		objs = make([]map[string]json.RawMessage, 1)
		if err := json.Unmarshal([]byte(fs.Body), &objs[0]); err != nil {
			t.Fatalf("refusal body %q: %v", fs.Body, err)
		}
	}
	if len(objs) != len(ids) {
		t.Fatalf("%d error objects for %d requests: %s", len(objs), len(ids), fs.Body)
	}
	for i, o := range objs {
		if string(o["id"]) != ids[i] || o["error"] == nil {
			t.Fatalf("error object %d: %s; want id %s and an error", i, fs.Body, ids[i])
		}
	}
}

func equalDecision(a, b algorithms.Decision) bool {
	return a.Now == b.Now && a.Blocked == b.Blocked && a.BlockedBy == b.BlockedBy &&
		a.BlockedFor == b.BlockedFor && slices.Equal(a.Results, b.Results)
}
