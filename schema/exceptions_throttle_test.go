package schema

import (
	"regexp"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// throttle objects of the rules of a configuration.
func throttles(doc map[string]any) []map[string]any {
	var out []map[string]any
	for _, r := range objects(doc["rules"]) {
		if t, ok := r["throttle"].(map[string]any); ok {
			out = append(out, t)
		}
	}
	return out
}

const oneFunnel = `[{"algorithm":"funnel","capacity":10,"rate":5,"period":"1s"}]`

// Checks of a rule's throttle the schema cannot make. Its exclusions
// (response_cost, lease, overrides, tiers from redis, shadow) and its
// funnel-only limits, of every tier, are in the schema.
var throttleExceptions = []exception{
	{
		name:    "throttle-max-delay-out-of-range",
		why:     "comparing a duration string with 10ms and 1m across units (\"9999us\", \"61s\", \"0.5m1s\") is arithmetic",
		message: regexp.MustCompile(`^rules\[\d+\]\.throttle\.max_delay: must be at least 10ms and at most 1m$`),
		applies: func(_ []byte, doc map[string]any) bool {
			for _, t := range throttles(doc) {
				if d, ok := duration(t["max_delay"]); ok && (d < 10*time.Millisecond || d > time.Minute) {
					return true
				}
			}
			return false
		},
		example: `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"client_ip"}],"limits":` + oneFunnel + `,"throttle":{"max_delay":"61s"}}]}`,
	},
	{
		name:    "throttle-max-delay-overflow",
		why:     "as duration-overflow: a max_delay beyond 2^63ns (about 292 years) overflows time.ParseDuration; the schema checks its syntax only",
		message: regexp.MustCompile(`^rules\[\d+\]\.throttle\.max_delay: must be a duration string such as "500ms", "1m" or "1d"$`),
		applies: func(_ []byte, doc map[string]any) bool {
			for _, t := range throttles(doc) {
				s, ok := t["max_delay"].(string)
				if _, err := config.ParseDuration(s); ok && durationPattern.MatchString(s) && err != nil {
					return true
				}
			}
			return false
		},
		example: `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"client_ip"}],"limits":` + oneFunnel + `,"throttle":{"max_delay":"9999999999h"}}]}`,
	},
}

func init() { exceptions = append(exceptions, throttleExceptions...) }
