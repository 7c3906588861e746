package schema

import (
	"regexp"
	"time"
)

var redisExceptions = []exception{
	{
		name:    "nodes-duplicate",
		why:     "uniqueItems compares whole items, not one property of them",
		message: regexp.MustCompile(`^redis\.nodes\[\d+\]\.(address: duplicates nodes\[\d+\]|cluster: duplicates nodes\[\d+\]\.cluster: one Webdis per node)$`),
		applies: func(_ []byte, doc map[string]any) bool {
			redis, _ := doc["redis"].(map[string]any)
			addrs, clusters := map[any]bool{}, map[any]bool{}
			for _, n := range objects(redis["nodes"]) {
				if a, ok := n["address"].(string); ok && addrs[a] {
					return true
				} else if ok {
					addrs[a] = true
				}
				if c, ok := n["cluster"].(string); ok && clusters[c] {
					return true
				} else if ok {
					clusters[c] = true
				}
			}
			return false
		},
		example: exampleConfig(`{"transport":"webdis","cluster_mode":true,"nodes":[{"address":"a:1","cluster":"w"},{"address":"b:1","cluster":"w"}]}`, oneLog, ""),
	},
	{
		name:    "slot-map-refresh-out-of-range",
		why:     "comparing a duration string with 1s and 10m across units is arithmetic",
		message: regexp.MustCompile(`^redis\.slot_map_refresh: must be >= 1s and <= 10m$`),
		applies: func(_ []byte, doc map[string]any) bool {
			d, ok := duration(field(doc, "redis", "slot_map_refresh"))
			return ok && (d < time.Second || d > 10*time.Minute)
		},
		example: exampleConfig(`{"transport":"webdis","cluster_mode":true,"nodes":[{"address":"a:1","cluster":"w"}],"slot_map_refresh":"999ms"}`, oneLog, ""),
	},
}

func init() { exceptions = append(exceptions, redisExceptions...) }
