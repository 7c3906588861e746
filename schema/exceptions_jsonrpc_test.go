package schema

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// callTables are the cost tables (cost.methods, cost.tools) of a rule.
func callTables(r map[string]any) []map[string]any {
	c, _ := r["cost"].(map[string]any)
	var out []map[string]any
	for _, f := range []string{"methods", "tools"} {
		if t, ok := c[f].(map[string]any); ok {
			out = append(out, t)
		}
	}
	return out
}

// smallestCapacity is the least limit or capacity of a rule's limits.
func smallestCapacity(r map[string]any) (int64, bool) {
	least, found := int64(0), false
	for _, l := range allLimits(r) {
		c, ok := integer(l["limit"])
		if algo, _ := l["algorithm"].(string); algo == "funnel" || algo == "token_bucket" {
			c, ok = integer(l["capacity"])
		}
		if ok && (!found || c < least) {
			least, found = c, true
		}
	}
	return least, found
}

// batchStates is, over-counted as no match excludes another, the limit
// states one request's batch may carry for rule r: per key its limits,
// block key, tier key (tiers from redis) and override key, max_keys keys
// for a jsonrpc rule with call parts.
func batchStates(r map[string]any) int64 {
	n := int64(0)
	for _, limits := range limitLists(r) {
		n = max(n, int64(len(limits)))
	}
	if b, ok := r["manual_block"].(bool); !ok || b {
		n++
	}
	if t, _ := r["tiers"].(map[string]any); t != nil && t["from"] == "redis" {
		n++ // the tier key
	}
	if r["overrides"] == true {
		n++ // the override key
	}
	j, rpc := r["jsonrpc"].(map[string]any)
	if rpc && hasCallPart(r) {
		keys, ok := integer(j["max_keys"])
		if !ok {
			keys = config.DefaultMaxCallKeys
		}
		n *= keys
	}
	return n
}

// Checks of jsonrpc rules the schema cannot make.
var jsonrpcExceptions = []exception{
	{
		name:    "jsonrpc-batch-states",
		why:     "as limits-in-all: the bound is on the limit states of the rules that may match one request together, max_keys times a rule's limits and block key, a product and a sum a schema cannot take",
		message: regexp.MustCompile(`^(_rules_\[\d+\]\.)?rules\[\d+\]\.jsonrpc\.max_keys: one batch may carry \d+ keys of this rule's .*, \d+ limit states in all; at most 64`),
		applies: func(_ []byte, doc map[string]any) bool {
			for _, c := range configsOf(doc) {
				n, rpc := int64(0), false
				for _, r := range objects(c["rules"]) {
					n += batchStates(r)
					_, ok := r["jsonrpc"].(map[string]any)
					rpc = rpc || ok
				}
				if rpc && n > config.MaxBatchStates {
					return true
				}
			}
			return false
		},
		example: `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"call","path":"method"}],"jsonrpc":{"max_keys":33},"limits":` + oneLog + `}]}`,
	},
	{
		name:    "cost-table-above-capacity",
		why:     "as cost-above-capacity: each entry of cost.methods and cost.tools (a formula's max) compared with each limit's limit or capacity needs $data",
		message: regexp.MustCompile(`^(_rules_\[\d+\]\.)?rules\[\d+\]\.cost\.(methods|tools)\[".*"\]: must be <= \d+, the limit's capacity of limits\[\d+\]$`),
		applies: func(_ []byte, doc map[string]any) bool {
			for _, c := range configsOf(doc) {
				for _, r := range objects(c["rules"]) {
					least, ok := smallestCapacity(r)
					for _, t := range callTables(r) {
						for _, e := range t {
							units, isNum := integer(e)
							if f, isObj := e.(map[string]any); isObj {
								units, isNum = integer(f["max"])
							}
							if ok && isNum && units > least {
								return true
							}
						}
					}
				}
			}
			return false
		},
		example: `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"client_ip"}],"jsonrpc":{},"cost":{"methods":{"eth_call":6},"default":1},"limits":` + oneLog + `}]}`,
	},
	{
		name:    "cost-formula-max-below-min",
		why:     "comparing one field (max) with another (min) needs $data",
		message: regexp.MustCompile(`^(_rules_\[\d+\]\.)?rules\[\d+\]\.cost\.(methods|tools)\[".*"\]\.max: must be >= min \(\d+\)$`),
		applies: func(_ []byte, doc map[string]any) bool {
			for _, c := range configsOf(doc) {
				for _, r := range objects(c["rules"]) {
					for _, t := range callTables(r) {
						for _, e := range t {
							f, _ := e.(map[string]any)
							lo, ok1 := integer(f["min"])
							hi, ok2 := integer(f["max"])
							if ok1 && ok2 && hi < lo {
								return true
							}
						}
					}
				}
			}
			return false
		},
		example: `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"client_ip"}],"jsonrpc":{},"cost":{"methods":{"eth_getLogs":{"param":"params.0","min":3,"max":2}},"default":1},"limits":` + oneLog + `}]}`,
	},
	{
		name:    "jsonrpc-name-bytes",
		why:     "as key-prefix-bytes: maxLength counts characters; the parser bounds a method or tool name (in free and the cost tables) at 128 bytes",
		message: regexp.MustCompile(`(\.free\[\d+\]: must be a method name of 1 to 128 bytes|\[".*"\]: a name must have 1 to 128 bytes)`),
		applies: func(_ []byte, doc map[string]any) bool {
			long := func(s string) bool { return len(strings.TrimSuffix(s, "*")) > 128 && utf8.RuneCountInString(s) <= 129 }
			for _, c := range configsOf(doc) {
				for _, r := range objects(c["rules"]) {
					j, _ := r["jsonrpc"].(map[string]any)
					free, _ := j["free"].([]any)
					for _, f := range free {
						if s, ok := f.(string); ok && long(s) {
							return true
						}
					}
					for _, t := range callTables(r) {
						for name := range t {
							if len(name) > 128 && utf8.RuneCountInString(name) <= 128 {
								return true
							}
						}
					}
				}
			}
			return false
		},
		example: `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"client_ip"}],"jsonrpc":{"free":["` + strings.Repeat("\u00e9", 100) + `"]},"limits":` + oneLog + `}]}`,
	},
}

func init() { exceptions = append(exceptions, jsonrpcExceptions...) }
