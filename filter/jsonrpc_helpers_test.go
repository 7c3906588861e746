package filter

import (
	"strconv"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
	"github.com/redisrate/envoy-redis-ratelimit/filter/jsonrpc"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// rpcSpec is what makes a parsed rule a jsonrpc rule in these tests: its
// jsonrpc object, call parts appended to its key, and cost tables.
type rpcSpec struct {
	j         config.JSONRPC
	callParts []string // paths of {"source":"call"} parts, after the rule's own
	methods   map[string]jsonrpc.Entry
	tools     map[string]jsonrpc.Entry
	def       int64 // the tables' default
	refuse    bool  // the tables refuse a name not listed
	match     []config.HeaderMatch
}

// rpcHost is newFakeHost for a configuration whose rules named in specs
// are jsonrpc rules, set by hand (as config's parser will set them).
func rpcHost(t *testing.T, conf string, specs map[string]rpcSpec) *fakeHost {
	t.Helper()
	cfg, err := config.Parse([]byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	for i := range cfg.Rules {
		if sp, ok := specs[cfg.Rules[i].Name]; ok {
			sp.apply(&cfg.Rules[i])
		}
	}
	cfg.Redis.Prefix = redistest.Prefix(t)
	h := &fakeHost{Host: filtertest.NewHost(server.Addr), t: t}
	h.Deliver = func(id uint32, ok bool, reply []byte) { h.plugin.OnRedisReply(id, ok, reply) }
	t.Cleanup(h.Close)
	h.plugin = NewPlugin(cfg, h)
	return h
}

func (sp rpcSpec) apply(r *config.Rule) {
	j := sp.j
	if j.MaxCalls == 0 {
		j.MaxCalls = config.DefaultMaxCalls
	}
	if j.MaxKeys == 0 {
		j.MaxKeys = config.DefaultMaxCallKeys
	}
	if j.ErrorCode == 0 {
		j.ErrorCode = config.DefaultErrorCode
	}
	r.JSONRPC = &j
	for _, p := range sp.callParts {
		r.Key = append(r.Key, config.KeyPart{Source: config.SourceCall, BodyPath: p})
	}
	r.Match.Call = sp.match
	if sp.methods != nil || sp.tools != nil {
		r.Cost.Methods = &jsonrpc.Table{Names: sp.methods, Default: sp.def, Refuse: sp.refuse}
		r.Cost.Tools = &jsonrpc.Table{Names: sp.tools, Default: sp.def, Refuse: sp.refuse}
		r.Cost.Methods.Seal()
		r.Cost.Tools.Seal()
	}
}

// rpcOutcome is a JSON-RPC request's fate, and what its decide calls
// charged: each key (without its ":<i>") and cost, in call order.
type rpcOutcome struct {
	status int // the local reply's, 0 when admitted
	body   string
	keys   []string
	costs  []int64
	fcalls int
}

// sendCalls posts body to /rpc with headers ("name=value") through the
// filter, records the decide calls it sends, then pumps them.
func (h *fakeHost) sendCalls(body string, headers ...string) rpcOutcome {
	h.t.Helper()
	fs := filtertest.NewStream("192.0.2.7:40000", nil)
	st := h.plugin.NewStream(fs)
	defer st.OnDone()
	st.SetBodyFollows(body != "")
	pairs := [][2]string{{":method", "POST"}, {":path", "/rpc"}, {":authority", "rpc"}}
	for _, kv := range headers {
		k, v, _ := strings.Cut(kv, "=")
		pairs = setPair(pairs, k, v)
	}
	st.OnRequestHeaders(pairs)
	if st.WantsRequestBody() {
		st.OnRequestBody([]byte(body))
	}
	var o rpcOutcome
	for _, q := range h.Queue {
		keys, costs := decideChecks(h.t, q.Cmd)
		for i := range keys {
			keys[i] = strings.TrimPrefix(keys[i], h.plugin.cfg.Redis.Prefix)
		}
		o.keys, o.costs, o.fcalls = append(o.keys, keys...), append(o.costs, costs...), o.fcalls+1
	}
	h.Pump()
	o.status, o.body = fs.Status, fs.Body
	return o
}

// decideChecks reads a decide FCALL (algorithms.AppendCommand): each
// check's key, its ":<i>" cut, and cost, once per key (a rule's limits
// share it).
func decideChecks(t *testing.T, cmd []byte) (keys []string, costs []int64) {
	t.Helper()
	v, _, err := redisproto.Decode(cmd)
	if err != nil {
		t.Fatal(err)
	}
	elems, err := v.Array()
	if err != nil {
		t.Fatal(err)
	}
	args := make([]string, len(elems))
	for i, e := range elems {
		args[i], _ = e.Text()
	}
	if args[0] != "FCALL" || !strings.HasSuffix(args[1], "_decide") {
		t.Fatalf("not a decide call: %q", args[:2])
	}
	numkeys, _ := strconv.Atoi(args[2])
	nb, _ := strconv.Atoi(args[3+numkeys])
	checks := args[3+nb : 3+numkeys]
	rest := args[4+numkeys:]
	for i, k := range checks {
		base := k[:strings.LastIndexByte(k, ':')]
		cost, _ := strconv.ParseInt(rest[4*i+3], 10, 64)
		if len(keys) > 0 && keys[len(keys)-1] == base {
			continue
		}
		keys, costs = append(keys, base), append(costs, cost)
	}
	return keys, costs
}

// jsonArray is a JSON array of the given messages.
func jsonArray(msgs ...string) string { return "[" + strings.Join(msgs, ",") + "]" }

// reqMsg is a request calling method with params (JSON), id id.
func reqMsg(id int, method, params string) string {
	s := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"` + method + `"`
	if params != "" {
		s += `,"params":` + params
	}
	return s + "}"
}

// noteMsg is a notification of method.
func noteMsg(method string) string { return `{"jsonrpc":"2.0","method":"` + method + `"}` }

// toolMsg is a tools/call of tool name.
func toolMsg(id int, name string) string {
	return reqMsg(id, "tools/call", `{"name":"`+name+`","arguments":{}}`)
}
