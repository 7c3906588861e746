package schema

import "regexp"

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
}

func init() { exceptions = append(exceptions, hostileExceptions...) }
