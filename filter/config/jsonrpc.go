package config

import (
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/jsonrpc"
	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

// Bounds of a jsonrpc rule's lists: free names, and the names of each
// cost table.
const (
	maxFreeNames = 32
	maxCallNames = 256
)

// parseJSONRPC reads a rule's jsonrpc object: {"protocol": "mcp",
// "max_calls": 100, "max_keys": 16, "free": ["ping"], "refusal":
// "jsonrpc", "error_code": -32005}, each field defaulted (MCP's defaults
// for free and refusal under protocol mcp).
func parseJSONRPC(v jsonvalue.Value, path string) (*JSONRPC, error) {
	o, err := fields(v, path, "protocol", "max_calls", "max_keys", "free", "refusal", "error_code")
	if err != nil {
		return nil, err
	}
	j := &JSONRPC{}
	protocol, err := enum(o["protocol"], path+".protocol", "jsonrpc", "jsonrpc", "mcp")
	if err != nil {
		return nil, err
	}
	if protocol == "mcp" {
		j.Protocol = ProtocolMCP
	}
	n, err := integer(o["max_calls"], path+".max_calls", DefaultMaxCalls, 1, MaxCalls)
	if err != nil {
		return nil, err
	}
	j.MaxCalls = int(n)
	if n, err = integer(o["max_keys"], path+".max_keys", DefaultMaxCallKeys, 1, MaxCallKeys); err != nil {
		return nil, err
	}
	j.MaxKeys = int(n)
	if j.Free, err = parseFree(o["free"], path+".free"); err != nil {
		return nil, err
	}
	if !o["free"].Exists() && j.Protocol == ProtocolMCP {
		j.Free = MCPFree
	}
	def := "http"
	if j.Protocol == ProtocolMCP {
		def = "jsonrpc"
	}
	refusal, err := enum(o["refusal"], path+".refusal", def, "http", "jsonrpc")
	if err != nil {
		return nil, err
	}
	if refusal == "jsonrpc" {
		j.Refusal = RefusalJSONRPC
	}
	n, err = integer(o["error_code"], path+".error_code", DefaultErrorCode, -1<<31, 1<<31-1)
	switch {
	case err != nil:
		return nil, err
	case o["error_code"].Exists() && j.Refusal != RefusalJSONRPC:
		return nil, errAt(path+".error_code", "only with refusal: jsonrpc")
	case n == -32700 || n >= -32603 && n <= -32600:
		return nil, errAt(path+".error_code", "must not be -32700 or -32600 to -32603, which JSON-RPC 2.0 defines")
	}
	j.ErrorCode = int(n)
	return j, nil
}

// parseFree reads jsonrpc.free: method names, or prefixes ending in '*'.
func parseFree(v jsonvalue.Value, path string) ([]string, error) {
	if !v.Exists() {
		return nil, nil
	}
	if !v.IsArray() || len(v.Array()) > maxFreeNames {
		return nil, errAt(path, "must be an array of at most %d method names", maxFreeNames)
	}
	free := []string{}
	for i, e := range v.Array() {
		if e.Type == jsonvalue.String && e.Str == "*" {
			return nil, errAt(elem(path, i), `"*" alone would make every call free: list the methods to leave uncharged`)
		}
		name, _ := strings.CutSuffix(e.Str, "*")
		if e.Type != jsonvalue.String || name == "" || len(name) > jsonrpc.MaxNameLen || strings.Contains(name, "*") {
			return nil, errAt(elem(path, i), "must be a method name of 1 to %d bytes, or such a prefix followed by *", jsonrpc.MaxNameLen)
		}
		free = append(free, e.Str)
	}
	return free, nil
}

// notWithJSONRPC refuses, in a jsonrpc rule, what keys or decides one
// request at a time: a lease, a throttle, response_cost, on_limit degrade,
// overrides, tiers and a concurrency limit.
func notWithJSONRPC(o map[string]jsonvalue.Value, path string, r *Rule) error {
	const why = "not with jsonrpc: a batch has many keys"
	for _, f := range []string{"lease", "throttle", "response_cost", "tiers"} {
		if o[f].Exists() {
			return errAt(path+"."+f, why)
		}
	}
	if a := o["on_limit"].Get("action"); a.Type == jsonvalue.String && a.Str == "degrade" {
		return errAt(path+".on_limit.action", why)
	}
	if r.Overrides {
		return errAt(path+".overrides", why)
	}
	for i, l := range r.Limits {
		if l.Limit.Algorithm == algorithms.Concurrency {
			return errAt(elem(path+".limits", i)+".algorithm", why)
		}
	}
	return nil
}

// hasTable reports whether a cost object holds a cost table.
func hasTable(o map[string]jsonvalue.Value) bool {
	return o["methods"].Exists() || o["tools"].Exists()
}

// parseCostTables reads a jsonrpc rule's cost object with tables:
// {"methods": {...}, "tools": {...}, "default": 1 or "refuse"}. Both
// tables are set, sealed, and share the default; each entry's most units
// and the default must fit every limit.
func parseCostTables(o map[string]jsonvalue.Value, path string, r *Rule) (Cost, error) {
	c := Cost{Default: 1}
	switch {
	case r.JSONRPC == nil:
		for _, f := range []string{"methods", "tools"} {
			if o[f].Exists() {
				return c, errAt(path+"."+f, "only for a rule with jsonrpc")
			}
		}
	case o["tools"].Exists() && r.JSONRPC.Protocol != ProtocolMCP:
		return c, errAt(path+".tools", "only with jsonrpc.protocol: mcp, whose tools/call names its tool in params.name")
	case o["min"].Exists():
		return c, errAt(path+".min", "only with cost.header, which a jsonrpc rule does not take")
	}
	methods, tools := &jsonrpc.Table{}, &jsonrpc.Table{}
	switch d := o["default"]; {
	case !d.Exists():
		return c, errAt(path+".default", `required: the units of a name not listed, or "refuse"`)
	case d.Type == jsonvalue.String && d.Str == "refuse":
		methods.Refuse, tools.Refuse = true, true
		c.Default = 0
	case d.Type == jsonvalue.Number:
		n, err := integer(d, path+".default", 1, 0, jsonrpc.MaxValue)
		if err != nil {
			return c, err
		}
		if err := checkCosts(path+".default", n, r.Limits); err != nil {
			return c, err
		}
		methods.Default, tools.Default, c.Default = n, n, n
	default:
		return c, errAt(path+".default", `must be a number of units, or "refuse"`)
	}
	var err error
	if methods.Names, err = parseCallTable(o["methods"], path+".methods", r.Limits, r.JSONRPC.unusedMethod); err != nil {
		return c, err
	}
	if tools.Names, err = parseCallTable(o["tools"], path+".tools", r.Limits, r.JSONRPC.unusedTool); err != nil {
		return c, err
	}
	if methods.Refuse && r.JSONRPC.Protocol == ProtocolMCP && !o["methods"].Exists() && !onlyToolCalls(r) {
		return c, errAt(path+".default", `"refuse" without cost.methods refuses every call but tools/call and the free ones, tools/list too: list cost.methods ({} to mean it), or add match.call {"path": "method", "exact": "tools/call"}`)
	}
	if !methods.Refuse && methods.Default == 0 && allZero(methods.Names) && allZero(tools.Names) {
		return c, errAt(path+".default", "every name costs 0, so the rule would charge nothing: a call of cost 0 adds no key")
	}
	methods.Seal()
	tools.Seal()
	c.Methods, c.Tools = methods, tools
	return c, nil
}

// parseCallTable reads cost.methods or cost.tools: names (exact, or a
// prefix ending in '*') to units or a formula; nil when absent. unused
// says why an entry could never be looked up, "" when it can.
func parseCallTable(v jsonvalue.Value, path string, limits []NamedLimit, unused func(name string) string) (map[string]jsonrpc.Entry, error) {
	if !v.Exists() {
		return nil, nil
	}
	if !v.IsObject() {
		return nil, errAt(path, `must be an object of costs by name, such as {"eth_call": 26, "eth_get*": 20}`)
	}
	names := map[string]jsonrpc.Entry{}
	var err error
	// The names first: a name given twice is reported before its values.
	v.ForEach(func(k, _ jsonvalue.Value) bool {
		name := k.String()
		at := format.Sprintf("%s[%q]", path, name)
		_, dup := names[name]
		switch {
		case name == "" || len(name) > jsonrpc.MaxNameLen:
			err = errAt(at, "a name must have 1 to %d bytes", jsonrpc.MaxNameLen)
		case strings.Contains(strings.TrimSuffix(name, "*"), "*"):
			err = errAt(at, `"*" may only end a name, making it a prefix such as "eth_get*"`)
		case dup:
			err = errAt(at, "duplicate field")
		case len(names) == maxCallNames:
			err = errAt(path, "must list at most %d names", maxCallNames)
		case unused(name) != "":
			err = errAt(at, "never used: %s", unused(name))
		}
		names[name] = jsonrpc.Entry{}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	v.ForEach(func(k, ev jsonvalue.Value) bool {
		name := k.String()
		at := format.Sprintf("%s[%q]", path, name)
		var e jsonrpc.Entry
		if e, err = parseCallCost(ev, at); err != nil {
			return false
		}
		most := e.Units
		if e.Formula != nil {
			most = e.Formula.Max
		}
		err = checkCosts(at, most, limits)
		names[name] = e
		return err == nil
	})
	return names, err
}

// parseCallCost reads one table entry: units, or a formula object.
func parseCallCost(v jsonvalue.Value, at string) (jsonrpc.Entry, error) {
	switch {
	case v.Type == jsonvalue.Number:
		n, err := integer(v, at, 0, 0, jsonrpc.MaxValue)
		return jsonrpc.Entry{Units: n}, err
	case v.IsObject():
		f, err := parseFormula(v, at)
		return jsonrpc.Entry{Formula: f}, err
	}
	return jsonrpc.Entry{}, errAt(at, "must be a number of units, or a formula object with param, base, per, every, min and max")
}

// parseFormula reads {"param": "params.0.toBlock", "minus":
// "params.0.fromBlock", "base": 60, "per": 1, "every": 100, "min": 60,
// "max": 600}: base, min 0 and per, every 1 unless set; max required.
func parseFormula(v jsonvalue.Value, at string) (*jsonrpc.Formula, error) {
	o, err := fields(v, at, "param", "minus", "base", "per", "every", "min", "max")
	if err != nil {
		return nil, err
	}
	f := &jsonrpc.Formula{}
	if f.Param, err = paramPath(o["param"], at+".param"); err != nil {
		return nil, err
	}
	if o["minus"].Exists() {
		if f.Minus, err = paramPath(o["minus"], at+".minus"); err != nil {
			return nil, err
		}
	}
	for _, n := range []struct {
		name     string
		dst      *int64
		def, min int64
		max      int64
	}{
		{"base", &f.Base, 0, 0, jsonrpc.MaxValue},
		{"per", &f.Per, 1, 0, jsonrpc.MaxPer},
		{"every", &f.Every, 1, 1, jsonrpc.MaxValue},
		{"min", &f.Min, 0, 0, jsonrpc.MaxValue},
		{"max", &f.Max, 0, 0, jsonrpc.MaxValue},
	} {
		if *n.dst, err = integer(o[n.name], at+"."+n.name, n.def, n.min, n.max); err != nil {
			return nil, err
		}
	}
	if !o["max"].Exists() {
		return nil, errAt(at+".max", "required: the most a call pays, and what it pays when param cannot be read")
	}
	switch bad := f.Check(); bad {
	case "":
	case "max":
		return nil, errAt(at+".max", "must be >= min (%d)", f.Min)
	default:
		return nil, errAt(at+"."+bad, "out of bounds") // the reads above bound every field
	}
	if f.Max > 0 && f.Base == 0 && f.Min == 0 {
		return nil, errAt(at+".min", "must be >= 1 when base is 0: else a call whose param reads 0 pays nothing, so the client chooses what it pays")
	}
	return f, nil
}

// callPath reads a dotted path in a JSON-RPC call's object ("method",
// "params.name", "params.0.toBlock").
func callPath(v jsonvalue.Value, at string) (string, error) {
	p, err := dottedPath(v, at, `must be a dotted field path such as method or params.name: at most 16 names, without # * ? | @ \ or NUL`)
	if err == nil && p == "params" {
		err = errAt(at, "must name a field inside params, such as params.name: params itself is an object or an array, never a value")
	}
	return p, err
}

// paramPath reads a formula's path, which must lie under params: the
// other fields of a call name it (jsonrpc, method) or are the client's
// tag (id), never what it pays for.
func paramPath(v jsonvalue.Value, at string) (string, error) {
	p, err := callPath(v, at)
	if err == nil && !strings.HasPrefix(p, "params.") {
		err = errAt(at, "must be a path under params, such as params.0.toBlock: a call's other fields (jsonrpc, method, id) never hold what it pays for")
	}
	return p, err
}

// parseCallMatches reads match.call: fields of each call that must all
// hold for the rule to charge it, in the shape of match.body.
func parseCallMatches(v jsonvalue.Value, path string) ([]HeaderMatch, error) {
	return parseValueMatches(v, path, "call", "path", callPath)
}

// HasCallParts reports whether the rule's key has a part read from each
// call (source call): its calls then have keys of their own.
func (r *Rule) HasCallParts() bool {
	for _, p := range r.Key {
		if p.Source == SourceCall {
			return true
		}
	}
	return false
}

// BatchStates is the most limit states one request's batch carries for
// the rule: per key (batchKeys) its limits, its block key, and the tier
// and override keys Redis reads to choose its limits.
func (r *Rule) BatchStates() int {
	n := r.Positions()
	for _, more := range []bool{r.ManualBlock, r.TiersFromRedis(), r.Overrides} {
		if more {
			n++
		}
	}
	return n * r.batchKeys()
}

// batchKeys is the most keys the rule has in one request: max_keys for a
// jsonrpc rule with call key parts, else one (every call of a request
// shares the key of its request parts).
func (r *Rule) batchKeys() int {
	if r.JSONRPC != nil && r.HasCallParts() {
		return r.JSONRPC.MaxKeys
	}
	return 1
}
