package schema

import (
	"regexp"
	"time"
)

// lease objects of the rules of a configuration.
func leases(doc map[string]any) []map[string]any {
	var out []map[string]any
	for _, r := range objects(doc["rules"]) {
		if l, ok := r["lease"].(map[string]any); ok {
			out = append(out, l)
		}
	}
	return out
}

// Checks of a rule's lease the schema cannot make.
var leaseExceptions = []exception{
	{
		name:    "lease-max-batch-above-capacity",
		why:     "as cost-above-capacity: lease.max_batch compared with the smallest limit or capacity of the rule's limits, of every tier, needs $data",
		message: regexp.MustCompile(`^rules\[\d+\]\.lease\.max_batch: must be <= \d+$`),
		applies: func(_ []byte, doc map[string]any) bool {
			for _, r := range objects(doc["rules"]) {
				l, _ := r["lease"].(map[string]any)
				batch, ok := integer(l["max_batch"])
				if !ok {
					continue
				}
				for _, lim := range allLimits(r) {
					capacity, found := integer(lim["limit"])
					if algo, _ := lim["algorithm"].(string); algo == "funnel" || algo == "token_bucket" {
						capacity, found = integer(lim["capacity"])
					}
					if found && batch > capacity {
						return true
					}
				}
			}
			return false
		},
		example: `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"client_ip"}],"limits":` + oneLog + `,"lease":{"max_batch":6}}]}`,
	},
	{
		name:    "lease-max-hold-out-of-range",
		why:     "comparing a duration string with 0 and 1h across units (\"0.5ns\", \"61m\", \"3601s\") is arithmetic",
		message: regexp.MustCompile(`^rules\[\d+\]\.lease\.max_hold: must be > 0 and at most 1h$`),
		applies: func(_ []byte, doc map[string]any) bool {
			for _, l := range leases(doc) {
				if d, ok := duration(l["max_hold"]); ok && (d <= 0 || d > time.Hour) {
					return true
				}
			}
			return false
		},
		example: `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"client_ip"}],"limits":` + oneLog + `,"lease":{"max_hold":"61m"}}]}`,
	},
}

func init() { exceptions = append(exceptions, leaseExceptions...) }
