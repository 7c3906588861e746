package schema

import (
	"encoding/json"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Higress's _rules_ (see filter/config/match_rules.go): each entry is a
// whole configuration beside its _match_*_ lists.

// explains reports whether e explains the disagreement on a configuration.
// An error inside a _rules_ entry ("_rules_[1].rules[0]...") is also tried
// as the same error of the entry on its own, so the exceptions written for
// a top-level configuration cover the entries too.
func (e *exception) explains(raw []byte, doc map[string]any, perr error) bool {
	if e.parserAccepts != (perr == nil) {
		return false
	}
	if perr == nil {
		return slices.ContainsFunc(configsOf(doc), func(d map[string]any) bool { return e.applies(raw, d) })
	}
	if e.applies(raw, doc) && e.message.MatchString(perr.Error()) {
		return true
	}
	m := entryError.FindStringSubmatch(perr.Error())
	if m == nil {
		return false
	}
	i, _ := strconv.Atoi(m[1])
	entries := objects(doc["_rules_"])
	return i < len(entries) && e.applies(raw, entries[i]) && e.message.MatchString(m[2])
}

var entryError = regexp.MustCompile(`^_rules_\[(\d+)\]\.(.*)$`)

// configsOf returns the top level and every _rules_ entry.
func configsOf(doc map[string]any) []map[string]any {
	return append([]map[string]any{doc}, objects(doc["_rules_"])...)
}

// entryKind is kindOf for a path inside a _rules_ entry.
func entryKind(path []string) string {
	if len(path) == 0 {
		return "matchRule"
	}
	return kindOf(path)
}

var matchKeys = []string{"_match_route_", "_match_route_prefix_", "_match_consumer_", "_match_domain_", "_match_service_"}

func init() {
	// An entry takes what the top level takes, and the match lists.
	optionalFields["matchRule"] = append(slices.Clone(optionalFields["root"]), matchKeys...)
	entryPools := map[string][]string{
		"matchRule._match_route_":        {`["default/api"]`, `["default/a","default/b"]`, `[]`, `[""]`, `"default/api"`, `[1]`},
		"matchRule._match_route_prefix_": {`["api-"]`, `[]`, `[""]`},
		"matchRule._match_consumer_":     {`["alice"]`, `[]`, `["alice",""]`},
		"matchRule._match_domain_": {`["*.example.com"]`, `["api.*"]`, `["*"]`, `["API.Example.com"]`, `["a*b"]`, `["**"]`,
			`["*a*"]`, `[""]`, `[]`, `"x"`},
		"matchRule._match_service_": {`["svc.ns.svc.cluster.local"]`, `["svc.ns.svc.cluster.local:80"]`, `[]`, `[""]`},
	}
	for k, v := range pools {
		if f, ok := strings.CutPrefix(k, "root."); ok {
			entryPools["matchRule."+f] = v
		}
	}
	maps.Copy(pools, entryPools)
	exceptions = append(exceptions, matchRuleExceptions...)
}

var matchRuleExceptions = []exception{
	{
		name:    "match-rules-redis-differ",
		why:     "the configurations of one plugin share one Redis client, so their redis objects must be equal; a schema cannot compare two values of the document",
		message: regexp.MustCompile(`^_rules_\[\d+\]\.redis: must be the same in every configuration`),
		applies: func(_ []byte, doc map[string]any) bool {
			var first any
			for i, c := range configsOf(doc) {
				if r, ok := c["redis"]; ok && first == nil {
					first = r
				} else if ok && i > 0 && !reflect.DeepEqual(r, first) {
					return true
				}
			}
			return false
		},
		example: `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"client_ip"}],"limits":` + oneLog + `}],` +
			`"_rules_":[{"_match_route_":["a"],"redis":{"cluster":"other"},"rules":[{"name":"s","key":[{"source":"path"}],"limits":` + oneLog + `}]}]}`,
	},
	{
		name:    "match-rules-rule-limits-differ",
		why:     "a rule name names its Redis keys, so a name in several configurations needs the same limits in each; a schema cannot compare items across arrays",
		message: regexp.MustCompile(`^_rules_\[\d+\]\.rules\[\d+\]\.limits: rule ".*" has other limits in `),
		applies: func(_ []byte, doc map[string]any) bool {
			limits := map[string]any{}
			for _, c := range configsOf(doc) {
				for _, r := range objects(c["rules"]) {
					name, _ := r["name"].(string)
					decides := []any{r["limits"], r["tiers"], r["overrides"]}
					if l, ok := limits[name]; ok && !reflect.DeepEqual(l, decides) {
						return true
					}
					limits[name] = decides
				}
			}
			return false
		},
		example: `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"client_ip"}],"limits":` + oneLog + `}],` +
			`"_rules_":[{"_match_domain_":["*"],"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"path"}],` +
			`"limits":[{"algorithm":"sliding_log","limit":6,"window":"1s"}]}]}]}`,
	},
}

// A _rules_ entry takes every property of the top level, by reference, and
// the match lists: a property added to the top level must be added there.
func TestMatchRuleHasTheTopLevelProperties(t *testing.T) {
	var s struct {
		Properties map[string]json.RawMessage
		Defs       struct {
			MatchRule struct{ Properties map[string]json.RawMessage } `json:"matchRule"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(JSON, &s); err != nil {
		t.Fatal(err)
	}
	top := slices.Sorted(maps.Keys(s.Properties))
	top = slices.DeleteFunc(top, func(k string) bool { return k == "_rules_" })
	var entry []string
	for k, v := range s.Defs.MatchRule.Properties {
		if slices.Contains(matchKeys, k) {
			continue
		}
		entry = append(entry, k)
		if want := `{"$ref": "#/properties/` + k + `"}`; string(v) != want {
			t.Errorf("$defs.matchRule.properties.%s is %s, want %s", k, v, want)
		}
	}
	slices.Sort(entry)
	if !slices.Equal(top, entry) {
		t.Errorf("top-level properties %v, a _rules_ entry's %v", top, entry)
	}
}
