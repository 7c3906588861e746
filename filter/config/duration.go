package config

import (
	"errors"
	"strings"
	"time"
)

// ParseDuration reads a Go duration string (time.ParseDuration) that may
// also use days ("d", 24h) and weeks ("w", 168h): "1d", "2w", "1d12h",
// "1.5d". A day here is 24 hours, not a calendar day; calendar periods
// are written as a limit's period.
func ParseDuration(s string) (time.Duration, error) {
	if !strings.ContainsAny(s, "dw") {
		return time.ParseDuration(s)
	}
	neg := strings.HasPrefix(s, "-")
	rest := strings.TrimLeft(s, "+-")
	if len(rest) != len(s)-1 && len(rest) != len(s) {
		return 0, errBadDuration
	}
	var total time.Duration
	for rest != "" {
		i := 0
		for i < len(rest) && (rest[i] == '.' || rest[i] >= '0' && rest[i] <= '9') {
			i++
		}
		j := i
		for j < len(rest) && (rest[j] < '0' || rest[j] > '9') && rest[j] != '.' {
			j++
		}
		num, unit := rest[:i], rest[i:j]
		if num == "" || unit == "" {
			return 0, errBadDuration
		}
		scale := time.Duration(1)
		switch unit {
		case "d":
			unit, scale = "h", 24
		case "w":
			unit, scale = "h", 168
		}
		d, err := time.ParseDuration(num + unit)
		if err != nil {
			return 0, err
		}
		if d > (1<<63-1)/scale || total > 1<<63-1-d*scale {
			return 0, errors.New("time: invalid duration " + quote(s))
		}
		total += d * scale
		rest = rest[j:]
	}
	if neg {
		total = -total
	}
	return total, nil
}

var errBadDuration = errors.New("time: invalid duration")

func quote(s string) string { return `"` + s + `"` }
