package schema

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// Checks of rule names and of the rules together, which build metric
// names or add across rules: no JSON Schema keyword does either.
var ruleSetExceptions = []exception{
	{
		name:    "rule-names-collide-in-prometheus",
		why:     "names that differ only in \".\", \"-\" and \"_\" are distinct items; uniqueItems cannot compare them as Prometheus does",
		message: regexp.MustCompile(`^(_rules_\[\d+\]\.)?rules\[\d+\]\.name: .* give the same Prometheus metric names`),
		applies: func(_ []byte, doc map[string]any) bool {
			seen := map[string]string{}
			for _, c := range configsOf(doc) {
				for _, r := range objects(c["rules"]) {
					if n, ok := r["name"].(string); ok {
						metric := strings.NewReplacer(".", "_", "-", "_").Replace(n)
						if other, dup := seen[metric]; dup && other != n {
							return true
						}
						seen[metric] = n
					}
				}
			}
			return false
		},
		example: `{"redis":{"cluster":"redis"},"rules":[{"name":"a.b","key":[{"source":"client_ip"}],"limits":` + oneLog + `},{"name":"a-b","key":[{"source":"path"}],"limits":` + oneLog + `}]}`,
	},
	{
		name:    "rule-name-istio-tag",
		why:     "whether Istio's stats tag regexes cut a metric depends on the metric names built from the rule name, which the schema does not build",
		message: regexp.MustCompile(`^rules\[\d+\]\.name: .*: Istio's stats tag "[a-z_]+" would cut part of the metric`),
		applies: func(_ []byte, doc map[string]any) bool {
			for _, r := range objects(doc["rules"]) {
				if n, ok := r["name"].(string); ok && regexp.MustCompile(`cache|component|wasm_filter|rbac|istio_dry_run_|shadow_`).MatchString(n) {
					return true
				}
			}
			return false
		},
		example: `{"redis":{"cluster":"redis"},"rules":[{"name":"rbac","key":[{"source":"client_ip"}],"limits":` + oneLog + `}]}`,
	},
	{
		name:    "limits-in-all",
		why:     "the bound is on the limits of the rules of a configuration that may match one request together, a sum over their matches a schema cannot take",
		message: regexp.MustCompile(`^(_rules_\[\d+\]\.)?rules\[\d+\]: one request may match this rule and .*, \d+ limits in all; at most \d+`),
		applies: func(_ []byte, doc map[string]any) bool {
			for _, c := range configsOf(doc) {
				n := 0
				for _, r := range objects(c["rules"]) {
					positions := 0
					for _, limits := range limitLists(r) {
						positions = max(positions, len(limits))
					}
					n += positions
				}
				if n > config.MaxRequestLimits {
					return true
				}
			}
			return false
		},
		example: func() string {
			var rules []string
			for i := range 3 {
				var limits []string
				for j := range 3 {
					limits = append(limits, fmt.Sprintf(`{"name":"l%d","algorithm":"sliding_log","limit":5,"window":"1s"}`, j))
				}
				rules = append(rules, fmt.Sprintf(`{"name":"r%d","key":[{"source":"client_ip"}],"limits":[%s]}`, i, strings.Join(limits, ",")))
			}
			return `{"redis":{"cluster":"redis"},"rules":[` + strings.Join(rules, ",") + `]}`
		}(),
	},
}

func init() { exceptions = append(exceptions, ruleSetExceptions...) }
