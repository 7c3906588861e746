package schema

import (
	"regexp"
	"strings"
)

// quotaEndpoints are the quota_endpoint objects of a configuration, each
// with the configuration holding it.
func quotaEndpoints(doc map[string]any) (qs, in []map[string]any) {
	for _, c := range configsOf(doc) {
		if q, ok := c["quota_endpoint"].(map[string]any); ok {
			qs, in = append(qs, q), append(in, c)
		}
	}
	return qs, in
}

// quotaRulesOK reports whether a quota_endpoint's rules (named, or by
// default every rule not shadow and without call key parts) name this
// configuration's rules once each, none missing nor with call key parts,
// at most 8 limits in all, as far as a document shows: limits of a tier
// count as their tier's longest list.
func quotaRulesOK(q, c map[string]any) bool {
	byName := map[string]map[string]any{}
	var order []string
	for _, r := range objects(c["rules"]) {
		n, _ := r["name"].(string)
		byName[n] = r
		if s, _ := r["shadow"].(bool); !s && !hasCallPart(r) {
			order = append(order, n)
		}
	}
	if names, ok := q["rules"].([]any); ok {
		order = order[:0]
		seen := map[string]bool{}
		for _, v := range names {
			n, _ := v.(string)
			if byName[n] == nil || seen[n] || hasCallPart(byName[n]) {
				return false
			}
			seen[n] = true
			order = append(order, n)
		}
	}
	total := 0
	for _, n := range order {
		most := 0
		for _, limits := range limitLists(byName[n]) {
			most = max(most, len(limits))
		}
		total += most
	}
	return len(order) > 0 && total <= 8
}

// hasCallPart reports whether a rule's key has a part of source call.
func hasCallPart(r map[string]any) bool {
	for _, p := range objects(r["key"]) {
		if p["source"] == "call" {
			return true
		}
	}
	return false
}

// Checks of quota_endpoint the schema cannot make.
var quotaExceptions = []exception{
	{
		name:    "quota-endpoint-path-not-normalized",
		why:     "as match-path-not-normalized: a schema pattern cannot compute a path's normal form",
		message: regexp.MustCompile(`^(_rules_\[\d+\]\.)?quota_endpoint\.path: must be a normalized path`),
		applies: func(_ []byte, doc map[string]any) bool {
			qs, _ := quotaEndpoints(doc)
			for _, q := range qs {
				if p, _ := q["path"].(string); regexp.MustCompile(`//|/\.\.?(/|$)|;|\\|%|./$`).MatchString(p) {
					return true
				}
			}
			return false
		},
		example: `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"header","name":"x-user"}],"limits":` + oneLog + `}],"quota_endpoint":{"path":"/a//quota"}}`,
	},
	{
		name:    "quota-endpoint-rules",
		why:     "the names must be rules of the same configuration, each once, with at most 8 limits in all (by default the rules not shadow): a schema cannot compare one property with another's values, nor sum them",
		message: regexp.MustCompile(`^(_rules_\[\d+\]\.)?quota_endpoint\.rules(\[\d+\])?: (no rule|rule "[^"]*" is named twice|rule "[^"]*" has call key parts|every rule is shadow|\d+ limits in all)`),
		applies: func(_ []byte, doc map[string]any) bool {
			qs, in := quotaEndpoints(doc)
			for i := range qs {
				if !quotaRulesOK(qs[i], in[i]) {
					return true
				}
			}
			return false
		},
		example: `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"header","name":"x-user"}],"limits":` + oneLog + `}],"quota_endpoint":{"path":"/quota","rules":["` + strings.Repeat("s", 2) + `"]}}`,
	},
}

func init() { exceptions = append(exceptions, quotaExceptions...) }
