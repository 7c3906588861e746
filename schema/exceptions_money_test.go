package schema

import (
	"math"
	"strconv"
	"strings"
)

// moneyReserve is roughly what out output tokens cost at a price table's
// dearest output or reasoning price, in its unit (0 when unreadable).
func moneyReserve(pr map[string]any, out int64) int64 {
	per := map[string]float64{"nano": 1e9, "micro": 1e6, "milli": 1e3, "cent": 100}
	unit, _ := pr["unit"].(string)
	prefix, _, _ := strings.Cut(unit, "_")
	dearest := 0.0
	var tables []map[string]any
	if d, ok := pr["default"].(map[string]any); ok {
		tables = append(tables, d)
	}
	if ms, ok := pr["models"].(map[string]any); ok {
		for _, m := range ms {
			if o, ok := m.(map[string]any); ok {
				tables = append(tables, o)
			}
		}
	}
	for _, t := range tables {
		for _, k := range []string{"output", "reasoning"} {
			if s, ok := t[k].(string); ok {
				if v, err := strconv.ParseFloat(s, 64); err == nil {
					dearest = max(dearest, v)
				}
			}
		}
	}
	return int64(math.Ceil(float64(out) * dearest * per[prefix] / 1e6))
}
