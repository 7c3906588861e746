package config

import (
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/filter/jsonrpc"
)

// checkCallMatches refuses a jsonrpc rule's match.call that leaves the
// rule nothing to charge: a method test that only free calls pass, or an
// absent test on a field a call key part reads.
func checkCallMatches(r *Rule, path string) error {
	for i, m := range r.Match.Call {
		at := elem(path+".match.call", i)
		if m.Name == "method" && (m.Op == HeaderExact && r.JSONRPC.IsFree(m.Value) || m.Op == HeaderPrefix && r.JSONRPC.freePrefix(m.Value)) {
			return errAt(at, "every call it lets through is free (jsonrpc.free), so the rule would charge nothing")
		}
		if m.Op != HeaderAbsent {
			continue
		}
		for _, p := range r.Key {
			if p.Source == SourceCall && p.BodyPath == m.Name {
				return errAt(at, "the key's part %s reads this field, so no call the rule charges would have its key", p.Describe())
			}
		}
	}
	return nil
}

// freePrefix reports whether every method starting with prefix is free:
// some free entry is a prefix of it followed by '*'.
func (j *JSONRPC) freePrefix(prefix string) bool {
	for _, f := range j.Free {
		if p, ok := strings.CutSuffix(f, "*"); ok && strings.HasPrefix(prefix, p) {
			return true
		}
	}
	return false
}

// coversFree reports whether every name a table entry covers (an exact
// name, or a prefix followed by '*') is free.
func (j *JSONRPC) coversFree(name string) bool {
	if p, ok := strings.CutSuffix(name, "*"); ok {
		return j.freePrefix(p)
	}
	return j.IsFree(name)
}

// unusedMethod says why cost.methods[name] is never looked up, "" when
// it is: a free method, or tools/call under protocol mcp.
func (j *JSONRPC) unusedMethod(name string) string {
	switch {
	case j.Protocol == ProtocolMCP && name == "tools/call":
		return "under protocol mcp a tools/call is priced by cost.tools"
	case j.coversFree(name):
		return "jsonrpc.free leaves these calls uncharged"
	}
	return ""
}

// unusedTool says why cost.tools[name] is never looked up: tools/call is
// free.
func (j *JSONRPC) unusedTool(string) string {
	if j.IsFree("tools/call") {
		return "jsonrpc.free leaves tools/call uncharged"
	}
	return ""
}

// allZero reports whether every entry of a table costs 0 at most.
func allZero(names map[string]jsonrpc.Entry) bool {
	for _, e := range names {
		if e.Units > 0 || e.Formula != nil && e.Formula.Max > 0 {
			return false
		}
	}
	return true
}

// onlyToolCalls reports whether the rule's match.call lets through only
// tools/call.
func onlyToolCalls(r *Rule) bool {
	for _, m := range r.Match.Call {
		if m.Name == "method" && m.Op == HeaderExact && m.Value == "tools/call" {
			return true
		}
	}
	return false
}
