package schema

import (
	"encoding/json"
	"math"
	"regexp"
	"strings"
)

// failure_mode: local scales every limit by local_fallback.share, and the
// scaled limit must stay in the algorithms' range.
var localExceptions = []exception{
	{
		name:    "local-share-scales-out-of-range",
		why:     "a funnel scaled by the share (capacity and rate times share, rounded up) can pass 2^48us of capacity * period / rate; a schema cannot multiply two values of the document",
		message: regexp.MustCompile(`^local_fallback\.share: scales limit ".*" of rules\[\d+\] out of range: `),
		applies: func(_ []byte, doc map[string]any) bool {
			n, _ := field(doc, "local_fallback", "share").(json.Number)
			share, err := n.Float64()
			if err != nil || share <= 0 {
				return false
			}
			ppm := int64(math.Round(share * 1e6))
			scale := func(v int64) int64 { return max(1, (v*ppm+999_999)/1_000_000) }
			return anyLimit(doc, func(algo string, l map[string]any) bool {
				rate, ok1 := integer(l["rate"])
				if algo == "token_bucket" {
					rate, ok1 = integer(l["refill"])
				}
				capacity, ok2 := integer(l["capacity"])
				period, ok3 := duration(l["period"])
				if algo != "funnel" && algo != "token_bucket" || !ok1 || !ok2 || !ok3 || rate < 1 || rate > 1<<40 || capacity > 1<<40 {
					return false
				}
				rate, capacity = scale(rate), scale(capacity)
				t := (period.Microseconds() + rate/2) / rate
				return t >= 1 && capacity > (1<<48)/t
			})
		},
		example: strings.Replace(exampleConfig("", `[{"algorithm":"funnel","capacity":1,"rate":2,"period":"87600h"}]`, ""),
			`"rules"`, `"failure_mode":"local","local_fallback":{"share":0.25},"rules"`, 1),
	},
}

func init() { exceptions = append(exceptions, localExceptions...) }
