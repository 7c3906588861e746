package schema

import (
	"reflect"
	"regexp"
)

// Checks added against hostile input (RELIABILITY.md, "Hostile input:
// costs, paths and configuration") that compare fields with each other.
var hostileExceptions = []exception{
	{
		name:    "cost-default-below-min",
		why:     "comparing cost.default with cost.min needs $data, which draft 2020-12 lacks; the schema checks default >= 1 when min is absent",
		message: regexp.MustCompile(`^rules\[\d+\]\.cost\.default: must be >= min \(\d+\)`),
		applies: func(_ []byte, doc map[string]any) bool {
			for _, r := range objects(doc["rules"]) {
				c, _ := r["cost"].(map[string]any)
				lowest, ok := integer(c["min"])
				def, found := integer(c["default"])
				if !found {
					def = 1
				}
				if ok && def < lowest {
					return true
				}
			}
			return false
		},
		example: exampleConfig("", oneLog, `{"header":"x-cost","min":2}`),
	},
	{
		name:    "match-rules-rule-key-differs",
		why:     "a rule name names its Redis keys, so a name in several configurations needs the same key parts (and, reading client_ip, the same xff_trusted_hops) in each; a schema cannot compare items across arrays",
		message: regexp.MustCompile(`^_rules_\[\d+\]\.rules\[\d+\]\.key: rule ".*" (has other key parts|reads client_ip with other xff_trusted_hops) in `),
		applies: func(_ []byte, doc map[string]any) bool {
			type seen struct{ key, hops any }
			keys := map[string]seen{}
			for _, c := range configsOf(doc) {
				for _, r := range objects(c["rules"]) {
					name, _ := r["name"].(string)
					now := seen{r["key"], c["xff_trusted_hops"]}
					if s, ok := keys[name]; ok && !reflect.DeepEqual(s, now) {
						return true
					}
					keys[name] = now
				}
			}
			return false
		},
		example: `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"header","name":"x-user"}],"limits":` + oneLog + `}],` +
			`"_rules_":[{"_match_domain_":["*"],"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"client_ip"}],"limits":` + oneLog + `}]}]}`,
	},
	{
		name:    "match-path-not-normalized",
		why:     "requests are matched on their normalized path (escapes of unreserved bytes decoded, slashes merged, dot segments and ;params dropped): a match path not in that form never matches; a schema pattern cannot compute the normal form",
		message: regexp.MustCompile(`^(_rules_\[\d+\]\.)?rules\[\d+\]\.match\.(path|path_prefix): must be a normalized path`),
		applies: func(_ []byte, doc map[string]any) bool {
			for _, c := range configsOf(doc) {
				for _, r := range objects(c["rules"]) {
					m, _ := r["match"].(map[string]any)
					for _, f := range []string{"path", "path_prefix"} {
						if p, _ := m[f].(string); regexp.MustCompile(`//|/\.\.?(/|$)|;|\\|%`).MatchString(p) {
							return true
						}
					}
				}
			}
			return false
		},
		example: `{"redis":{"cluster":"redis"},"rules":[{"name":"r","match":{"path":"/a//b"},"key":[{"source":"header","name":"x-user"}],"limits":` + oneLog + `}]}`,
	},
}

func init() { exceptions = append(exceptions, hostileExceptions...) }
