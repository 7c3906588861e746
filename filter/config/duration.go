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
	if d, ok := wholeUnits(s); ok {
		return d, nil
	}
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

// wholeUnits reads the common form, whole units of one kind ("200ms",
// "1h"), as time.ParseDuration does; ok is false for any other form, or a
// value past its range. It spares the first VM's configure compiling
// time.ParseDuration.
func wholeUnits(s string) (d time.Duration, ok bool) {
	var n int64
	i := 0
	for ; i < len(s) && i < 18 && s[i] >= '0' && s[i] <= '9'; i++ {
		n = n*10 + int64(s[i]-'0') // < 10^18: no overflow
	}
	var unit time.Duration
	switch s[i:] {
	case "ms":
		unit = time.Millisecond
	case "s":
		unit = time.Second
	case "m":
		unit = time.Minute
	case "h":
		unit = time.Hour
	default:
		return 0, false
	}
	if i == 0 || n > int64((1<<63-1)/unit) {
		return 0, false
	}
	return time.Duration(n) * unit, true
}

func quote(s string) string { return `"` + s + `"` }
