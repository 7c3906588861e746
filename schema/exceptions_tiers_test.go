package schema

import (
	"encoding/json"
	"regexp"
)

// limitLists returns a rule's lists of limits, by the name their limits
// default to: its limits, or each tier's.
func limitLists(r map[string]any) map[string][]map[string]any {
	rule, _ := r["name"].(string)
	out := map[string][]map[string]any{}
	if _, ok := r["limits"]; ok {
		out[rule] = objects(r["limits"])
	}
	t, _ := r["tiers"].(map[string]any)
	levels, _ := t["limits"].(map[string]any)
	for name, limits := range levels {
		out[rule+"."+name] = objects(limits)
	}
	return out
}

// allLimits returns every limit of a rule, of every tier.
func allLimits(r map[string]any) []map[string]any {
	var out []map[string]any
	for _, limits := range limitLists(r) {
		out = append(out, limits...)
	}
	return out
}

// Checks across a rule's tiers, or between its tiers and its key.
var tierExceptions = []exception{
	{
		name:    "tiers-default-unknown",
		why:     "default must name a key of limits; a schema cannot compare a value with another object's keys",
		message: regexp.MustCompile(`^rules\[\d+\]\.tiers\.default: ".*" is not one of the tiers in limits$`),
		applies: func(_ []byte, doc map[string]any) bool {
			for _, r := range objects(doc["rules"]) {
				t, ok := r["tiers"].(map[string]any)
				levels, _ := t["limits"].(map[string]any)
				def, _ := t["default"].(string)
				if _, known := levels[def]; ok && !known {
					return true
				}
			}
			return false
		},
		example: `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"client_ip"}],"tiers":{"from":"redis","default":"gold","limits":{"free":` + oneLog + `}}}]}`,
	},
	{
		name:    "tiers-key-part-beyond-key",
		why:     "key_part must index the rule's key, whose length a schema cannot compare with",
		message: regexp.MustCompile(`^rules\[\d+\]\.tiers\.from\.key_part: must be <= \d+$`),
		applies: func(_ []byte, doc map[string]any) bool {
			for _, r := range objects(doc["rules"]) {
				t, _ := r["tiers"].(map[string]any)
				from, _ := t["from"].(map[string]any)
				if i, ok := integer(from["key_part"]); ok && i >= int64(len(objects(r["key"]))) {
					return true
				}
			}
			return false
		},
		example: `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"client_ip"}],"tiers":{"from":{"key_part":1},"default":"free","limits":{"free":` + oneLog + `}}}]}`,
	},
	{
		name:    "tiers-positions-differ",
		why:     "limit i of every tier shares one state, so their algorithms (and sliding counters' windows, calendar limits' periods) must agree across the tiers: a comparison across arrays",
		message: regexp.MustCompile(`^rules\[\d+\]\.tiers\.limits\.[A-Za-z0-9_.-]+\[\d+\](\.window)?: must (be a?.*, as|have the period, time_zone and week_starts of) limit \d+ of `),
		applies: func(_ []byte, doc map[string]any) bool {
			for _, r := range objects(doc["rules"]) {
				t, _ := r["tiers"].(map[string]any)
				levels, _ := t["limits"].(map[string]any)
				byPosition := map[int]string{}
				for _, limits := range levels {
					for i, l := range objects(limits) {
						algo, _ := l["algorithm"].(string)
						if algo == "token_bucket" {
							algo = "funnel"
						}
						if algo == "sliding_counter" {
							w, _ := json.Marshal(l["window"])
							algo += string(w)
						}
						if algo == "calendar" {
							algo += calendarPeriod(l)
						}
						if seen, ok := byPosition[i]; ok && seen != algo {
							return true
						}
						byPosition[i] = algo
					}
				}
			}
			return false
		},
		example: `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"client_ip"}],` +
			`"tiers":{"from":"redis","default":"free","limits":{"free":[{"algorithm":"sliding_counter","limit":1,"window":"1m"}],"pro":[{"algorithm":"sliding_log","limit":5,"window":"1m"}]}}}]}`,
	},
}

func init() { exceptions = append(exceptions, tierExceptions...) }
