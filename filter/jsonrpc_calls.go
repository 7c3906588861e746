package filter

import (
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/jsonrpc"
	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

// The JSON-RPC step: a jsonrpc rule reads the request body as calls and
// charges each to its own key. The calls are read once per request; per
// rule, each charged call's key and cost are merged into the rule's
// distinct keys (equal keys summing their costs, in first-appearance
// order: one script call must not check a key twice), and each distinct
// key then takes the deny cache, the capacity check and its place in the
// request's call, as a plain rule's one key does.

// rpcState is the JSON-RPC step's state: the calls of the request's body,
// read once for every jsonrpc rule, and the keys of the rule being
// evaluated.
type rpcState struct {
	// read: calls, batch and fault hold this request's body.
	read  bool
	calls []jsonrpc.Call
	batch bool // the body is an array, answered with an array
	// fault is why the body is not JSON-RPC calls (jsonrpc.Read), 0 if it is.
	fault jsonbound.Refusal

	// head is the rule's key without its call parts (appendRequestKey).
	head []byte
	// The rule's distinct keys: key i is keys[ends[i-1]:ends[i]], charged
	// costs[i], opened by the call of index first[i]-1 (0: no call).
	keys  []byte
	ends  []int
	costs []int64
	first []int
}

// reset readies r for a new request, keeping its buffers.
func (r *rpcState) reset() {
	r.read, r.batch, r.calls, r.fault = false, false, r.calls[:0], 0
	r.resetKeys()
}

func (r *rpcState) resetKeys() {
	r.keys, r.ends, r.costs, r.first = r.keys[:0], r.ends[:0], r.costs[:0], r.first[:0]
}

// key is distinct key i.
func (r *rpcState) key(i int) []byte {
	at := 0
	if i > 0 {
		at = r.ends[i-1]
	}
	return r.keys[at:r.ends[i]]
}

// merge adds cost to key, the last bytes of r.keys from at, unless an
// equal key is already listed: it then sums there, and the bytes are
// dropped. It returns the number of distinct keys.
func (r *rpcState) merge(at int, cost int64, call int) int {
	key := r.keys[at:]
	for i := range r.ends {
		if string(r.key(i)) == string(key) {
			r.costs[i] += cost
			r.keys = r.keys[:at]
			return len(r.ends)
		}
	}
	r.ends, r.costs, r.first = append(r.ends, len(r.keys)), append(r.costs, cost), append(r.first, call)
	return len(r.ends)
}

// readCalls reads the request body's calls, once per request.
func (s *Stream) readCalls() *rpcState {
	if s.rpc == nil {
		s.rpc = &rpcState{}
	}
	r := s.rpc
	if r.read {
		return r
	}
	r.read = true
	if s.req.bodyLen == 0 || s.req.bodyRefusal != 0 || len(s.req.body) == 0 {
		return r // no calls, or a body no rule reads (its refusal is the rule's)
	}
	body := bytesString(s.req.body)
	r.calls, r.fault = jsonrpc.Read(body, config.MaxCalls, r.calls[:0])
	if r.fault == 0 && nonFiniteID(r.calls) {
		r.fault = jsonbound.RefuseNotJSONRPC
	}
	r.batch = jsonrpc.Batch(body)
	if m := s.pol.metrics.jsonrpc; m != nil && r.fault == 0 {
		m.calls.Increment(uint64(len(r.calls)))
		if r.batch {
			m.batches.Increment(1)
		}
	}
	return r
}

// nonFiniteID reports a call whose id is NaN, Infinity or -Infinity:
// numbers to jsonbound.ReadBody (as to Python), but no JSON-RPC id, and
// no JSON a refusal could echo.
func nonFiniteID(calls []jsonrpc.Call) bool {
	for i := range calls {
		if id := calls[i].ID; id != "" && (id[0] == 'N' || id[0] == 'I' || len(id) > 1 && id[1] == 'I') {
			return true
		}
	}
	return false
}

// evaluateCalls evaluates jsonrpc rule ri over the request's calls: it
// adds each distinct key to the request's call, or answers the request
// (true: evaluate stops).
func (s *Stream) evaluateCalls(ri int, rs steps) bool {
	cfg := s.pol.cfg
	rule := &cfg.Rules[ri]
	r := s.readCalls()
	r.resetKeys()
	if s.req.jsonBody(); s.req.refused == 0 && s.req.bodyLen > 0 {
		switch {
		case r.fault != 0:
			s.req.refuse(r.fault)
		case len(r.calls) > rule.JSONRPC.MaxCalls:
			s.req.refuse(jsonbound.RefuseTooManyCalls)
		}
	}
	if s.req.refused == 0 {
		if v := s.keyCalls(ri, r); v.reason != 0 {
			return s.refuseCall(&v)
		}
	}
	if s.req.refused != 0 {
		if s.unreadable(ri) {
			return true
		}
		return false // a shadow rule: its denial is noted (config refuses missing)
	}
	return s.addCallKeys(ri, rs, r)
}

// keyCalls lists rule ri's distinct keys and their summed costs over the
// calls, or returns the refusal a call causes. A field a call cannot be
// read by leaves s.req.refused set.
func (s *Stream) keyCalls(ri int, r *rpcState) verdict {
	cfg := s.pol.cfg
	rule := &cfg.Rules[ri]
	body := bytesString(s.req.body)
	refuse := func(why reason, i int) verdict { return verdict{rule: ri, limit: -1, reason: why, call: i + 1} }
	headRead, headOK := false, false
	for i := range r.calls {
		c := &r.calls[i]
		if c.Kind == jsonrpc.Response || rule.JSONRPC.IsFree(c.Method) {
			continue
		}
		matched := s.req.callMatch(rule.Match.Call, c, body)
		if s.req.refused != 0 {
			return verdict{}
		}
		if !matched {
			continue
		}
		cost, why := s.req.callCost(rule, c, c.Text(body))
		switch {
		case s.req.refused != 0:
			return verdict{}
		case why != 0:
			return refuse(why, i)
		case cost == 0:
			continue
		}
		if !headRead { // the request's parts: the same for every call
			r.head, headOK = appendRequestKey(r.head[:0], cfg.Redis.Prefix, rule, &s.req, cfg.TrustedHops)
			headRead = true
		}
		at, ok := len(r.keys), headOK
		if ok {
			r.keys, ok = appendCallParts(append(r.keys, r.head...), rule, &s.req, c, body)
		}
		switch {
		case s.req.refused != 0:
			return verdict{}
		case !headOK && rule.OnMissing == config.MissingDeny: // the request's part, no call's
			return verdict{rule: ri, limit: -1, reason: reasonMissingKey}
		case !ok && rule.OnMissing == config.MissingDeny:
			return refuse(reasonMissingKey, i)
		case !ok: // skip: this call is not charged by the rule
			r.keys = r.keys[:at]
		case r.merge(at, cost, i+1) > rule.JSONRPC.MaxKeys:
			return refuse(reasonTooManyKeys, i)
		}
	}
	return verdict{}
}

// refuseCall answers the request with v, a refusal of rule v.rule, and
// reports true; a shadow rule notes it and charges nothing (false). A
// missing key under a shadow rule is skipped, as a plain rule's is.
func (s *Stream) refuseCall(v *verdict) bool {
	m := &s.pol.metrics.rules[v.rule]
	if s.pol.cfg.Rules[v.rule].Shadow {
		if v.reason != reasonMissingKey {
			m.shadowDenied.Increment(1)
			s.noteShadowDenial(*v)
		}
		return false
	}
	m.denied.Increment(1)
	s.reject(v)
	return true
}

// addCallKeys puts rule ri's distinct keys into the request's call, each
// after its deny cache and capacity checks; true when one refused the
// request.
func (s *Stream) addCallKeys(ri int, rs steps, r *rpcState) bool {
	cfg := s.pol.cfg
	rule := &cfg.Rules[ri]
	tier := s.localTier(rule, cfg.TrustedHops)
	for k := range r.ends {
		s.ruleKey = append(s.ruleKey[:0], r.key(k)...)
		cost, call := r.costs[k], r.first[k]
		if rs.has(stepDenyCache) {
			if v, dr, ok := s.pol.denyCache.lookup(s.ruleKey, cost, tier, s.clock); ok {
				s.pol.metrics.cacheHits.Increment(1)
				v.call = call
				s.countDenial(&v)
				s.rejectCached(&v, dr)
				return true
			}
		}
		if lt, li := overCapacity(rule, tier, cost); li >= 0 {
			v := verdict{rule: ri, limit: li, tier: lt, reason: reasonCostExceedsCapacity, call: call}
			return s.refuseCall(&v)
		}
	}
	for k := range r.ends {
		s.ruleKey = append(s.ruleKey[:0], r.key(k)...)
		s.addFrom(ri, tier, r.costs[k], false, r.first[k])
	}
	return false
}

// callValue reads a field of a JSON-RPC call (c, of body) as bodyValue
// reads one of the body: a path under params is read in the call's params
// alone (Call.Param, as Lookup reads the call), any other in the call.
func (r *request) callValue(c *jsonrpc.Call, body, path string) (v string, present bool) {
	return r.fieldValue(r.callField(c, body, path))
}

// callField is a call's field as jsonbound.Lookup reads it; "" when it is
// absent or refused (r.refused then says why), or c is nil.
func (r *request) callField(c *jsonrpc.Call, body, path string) string {
	if c == nil {
		return ""
	}
	var raw string
	var why jsonbound.Refusal
	if rest, ok := strings.CutPrefix(path, "params."); ok {
		raw, why = c.Param(rest)
	} else {
		raw, why = jsonbound.Lookup(c.Text(body), path)
	}
	if why != 0 {
		r.refuse(why)
	}
	return raw
}

// callMatch reports whether every match.call entry holds for the call.
func (r *request) callMatch(ms []config.HeaderMatch, c *jsonrpc.Call, body string) bool {
	for i := range ms {
		if v, present := r.callValue(c, body, ms[i].Name); !valueMatches(&ms[i], v, present) {
			return false
		}
	}
	return true
}

// callCost is what a call costs under rule: by its method in
// cost.methods, or for MCP's tools/call by its tool (params.name) in
// cost.tools; without tables, cost.default. A name the table refuses
// returns its reason.
func (r *request) callCost(rule *config.Rule, c *jsonrpc.Call, call string) (int64, reason) {
	cs := &rule.Cost
	if cs.Methods == nil {
		return cs.Default, 0
	}
	t, name, why := cs.Methods, c.Method, reasonUnknownMethod
	if rule.JSONRPC.Protocol == config.ProtocolMCP && c.Method == "tools/call" {
		t, name, why = cs.Tools, "", reasonUnknownTool
		raw, fault := c.Param("name") // in the params Read kept: no second scan of the call
		if fault != 0 {
			r.refuse(fault)
		}
		if raw != "" && raw[0] == '"' {
			name = jsonvalue.Parse(raw).Str
		}
	}
	units, refused := t.Cost(name, call)
	if refused {
		return 0, why
	}
	return units, 0
}
