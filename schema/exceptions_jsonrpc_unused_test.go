package schema

import (
	"regexp"
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// rpcFree is a jsonrpc rule's free list, MCP's by default under mcp.
func rpcFree(j map[string]any) []string {
	free, set := j["free"].([]any)
	if !set {
		if j["protocol"] == "mcp" {
			return config.MCPFree
		}
		return nil
	}
	var out []string
	for _, f := range free {
		if s, ok := f.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// allFree reports whether every method a name covers (exact, or a
// prefix followed by '*') is free.
func allFree(free []string, name string) bool {
	p, isPrefix := strings.CutSuffix(name, "*")
	for _, f := range free {
		fp, fIsPrefix := strings.CutSuffix(f, "*")
		if fIsPrefix && strings.HasPrefix(p, fp) || !isPrefix && f == name {
			return true
		}
	}
	return false
}

// jsonrpcRules calls f with each rule that has a jsonrpc object, until f
// returns true.
func jsonrpcRules(doc map[string]any, f func(r, j map[string]any) bool) bool {
	for _, c := range configsOf(doc) {
		for _, r := range objects(c["rules"]) {
			if j, ok := r["jsonrpc"].(map[string]any); ok && f(r, j) {
				return true
			}
		}
	}
	return false
}

// Checks of what a jsonrpc rule could never charge, which compare one
// field with another.
var jsonrpcUnusedExceptions = []exception{
	{
		name:    "cost-table-charges-nothing",
		why:     "a default of 0 is refused only when every entry of both tables costs 0 too: a condition over all of an object's values",
		message: regexp.MustCompile(`^(_rules_\[\d+\]\.)?rules\[\d+\]\.cost\.default: every name costs 0, so the rule would charge nothing`),
		applies: func(_ []byte, doc map[string]any) bool {
			return jsonrpcRules(doc, func(r, _ map[string]any) bool {
				c, _ := r["cost"].(map[string]any)
				if d, ok := integer(c["default"]); !ok || d != 0 {
					return false
				}
				for _, t := range callTables(r) {
					for _, e := range t {
						units, _ := integer(e)
						if f, isObj := e.(map[string]any); isObj {
							units, _ = integer(f["max"])
						}
						if units != 0 {
							return false
						}
					}
				}
				return true
			})
		},
		example: `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"client_ip"}],"jsonrpc":{},"cost":{"methods":{"a":0},"default":0},"limits":` + oneLog + `}]}`,
	},
	{
		name:    "match-call-charges-nothing",
		why:     "match.call compared with jsonrpc.free (prefixes of prefixes) or with the key's call paths needs $data",
		message: regexp.MustCompile(`^(_rules_\[\d+\]\.)?rules\[\d+\]\.match\.call\[\d+\]: (every call it lets through is free|the key's part call .* reads this field)`),
		applies: func(_ []byte, doc map[string]any) bool {
			return jsonrpcRules(doc, func(r, j map[string]any) bool {
				m, _ := r["match"].(map[string]any)
				for _, t := range objects(m["call"]) {
					if t["path"] == "method" {
						if v, ok := t["exact"].(string); ok && allFree(rpcFree(j), v) {
							return true
						}
						if v, ok := t["prefix"].(string); ok && allFree(rpcFree(j), v+"*") {
							return true
						}
					}
					for _, p := range objects(r["key"]) {
						if t["absent"] == true && p["source"] == "call" && p["path"] == t["path"] {
							return true
						}
					}
				}
				return false
			})
		},
		example: `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"client_ip"}],"jsonrpc":{"protocol":"mcp"},"match":{"call":[{"path":"method","exact":"ping"}]},"limits":` + oneLog + `}]}`,
	},
	{
		name:    "cost-table-entry-unused",
		why:     "a cost table's names compared with jsonrpc.free (prefixes of prefixes) need $data",
		message: regexp.MustCompile(`^(_rules_\[\d+\]\.)?rules\[\d+\]\.cost\.(methods|tools)\[".*"\]: never used: `),
		applies: func(_ []byte, doc map[string]any) bool {
			return jsonrpcRules(doc, func(r, j map[string]any) bool {
				c, _ := r["cost"].(map[string]any)
				methods, _ := c["methods"].(map[string]any)
				tools, _ := c["tools"].(map[string]any)
				for name := range methods {
					if allFree(rpcFree(j), name) || j["protocol"] == "mcp" && name == "tools/call" {
						return true
					}
				}
				return len(tools) > 0 && allFree(rpcFree(j), "tools/call")
			})
		},
		example: `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"client_ip"}],"jsonrpc":{"free":["eth_chainId"]},"cost":{"methods":{"eth_chainId":1},"default":1},"limits":` + oneLog + `}]}`,
	},
}

func init() { exceptions = append(exceptions, jsonrpcUnusedExceptions...) }
