package usage

import "github.com/redisrate/envoy-redis-ratelimit/jsonvalue"

// MaxValue is the largest usage field counted, 2^40 (config's
// MaxResponseCost): a field above it makes the usage missing.
const MaxValue = 1 << 40

// maxNumberLen bounds a field's JSON number: a longer one is no count.
const maxNumberLen = 32

// A field's reading: absent (missing, or null), a count, or bad.
type fieldState uint8

const (
	absent fieldState = iota
	counted
	bad
)

// fieldValue reads a usage field. It counts when it is a JSON number whose
// value is an integer from 0 to MaxValue, however written: 100, 100.0,
// 1e2 and 1000e-1 are 100; -0 is 0. Any other value (1.5, -5, 1e308, a
// string, true, an object, a number over 32 characters) is bad: the
// usage is then missing whole, rather than counted without it. Work is
// bounded by the number's length.
func fieldValue(r jsonvalue.Value) (int64, fieldState) {
	switch {
	case r.Type == jsonvalue.Null || !r.Exists():
		return 0, absent
	case r.Type != jsonvalue.Number || r.Raw == "" || len(r.Raw) > maxNumberLen:
		return 0, bad
	}
	v, ok := exactInt(r.Raw)
	if !ok {
		return 0, bad
	}
	return v, counted
}

// exactInt reads a JSON number (RFC 8259's grammar) as an integer from 0
// to MaxValue; ok is false for any other value or text.
func exactInt(s string) (v int64, ok bool) {
	i, neg := 0, false
	if i < len(s) && s[i] == '-' {
		neg, i = true, i+1
	}
	// digits: the significant digits, without leading zeros; exp: the
	// power of ten they are scaled by.
	var digits [maxNumberLen]byte
	nd, exp, sawDigit := 0, 0, false
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		sawDigit = true
		if nd > 0 || s[i] != '0' {
			digits[nd], nd = s[i], nd+1
		}
	}
	if i < len(s) && s[i] == '.' {
		if i++; i == len(s) || s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			if nd > 0 || s[i] != '0' {
				digits[nd], nd = s[i], nd+1
			}
			exp--
		}
	}
	if !sawDigit {
		return 0, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg, i = s[i] == '-', i+1
		}
		if i == len(s) || s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		e := 0
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			e = min(e*10+int(s[i]-'0'), 1000) // beyond any integer counted
		}
		if eneg {
			e = -e
		}
		exp += e
	}
	if i != len(s) {
		return 0, false
	}
	for nd > 0 && digits[nd-1] == '0' { // trailing zeros raise the power
		nd, exp = nd-1, exp+1
	}
	switch {
	case nd == 0: // zero, -0 included
		return 0, true
	case neg || exp < 0 || nd+exp > 13: // negative, a fraction, or over 10^13
		return 0, false
	}
	for k := range nd {
		v = v*10 + int64(digits[k]-'0')
	}
	for range exp {
		v *= 10
	}
	return v, v <= MaxValue
}
