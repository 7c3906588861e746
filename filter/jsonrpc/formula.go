package jsonrpc

import "github.com/redisrate/envoy-redis-ratelimit/jsonbound"

// Bounds of a Formula's fields, which keep its arithmetic exact in int64.
const (
	MaxValue = 1 << 53 // Base, Min, Max, and a value read from params
	MaxPer   = 1 << 20 // Per
)

// Formula is a call's cost from one of its params:
//
//	v = value(Param) − value(Minus)   (Minus optional)
//	units = clamp(Base + Per × ceil(v / Every), Min, Max)
//
// A value is a JSON integer or an Ethereum QUANTITY string ("0x1f"), at
// most 2^53. When Param or Minus is absent, "latest" or another string,
// fractional, negative or too large, or when v is negative, the call
// costs Max: the client never chooses what it pays.
type Formula struct {
	// Param and Minus are dotted paths in the call's object
	// ("params.0.toBlock"); Minus "" when none.
	Param, Minus string
	Base, Per    int64
	Every        int64
	Min, Max     int64
}

// Check says which field is outside its bound, "" when none: Base, Min
// and Max in 0..2^53, Per in 0..2^20, Every >= 1 (and <= 2^53), Min <=
// Max, Param set. Units requires a formula Check accepts.
func (f *Formula) Check() string {
	switch {
	case f.Param == "":
		return "param"
	case f.Base < 0 || f.Base > MaxValue:
		return "base"
	case f.Per < 0 || f.Per > MaxPer:
		return "per"
	case f.Every < 1 || f.Every > MaxValue:
		return "every"
	case f.Min < 0 || f.Min > MaxValue:
		return "min"
	case f.Max < f.Min || f.Max > MaxValue:
		return "max"
	}
	return ""
}

// Units is the formula over the call's object (Call.Text). It allocates
// nothing.
func (f *Formula) Units(call string) int64 {
	v, ok := f.param(call, f.Param)
	if ok && f.Minus != "" {
		var m int64
		m, ok = f.param(call, f.Minus)
		v -= m
	}
	return f.Apply(v, ok)
}

// param reads a value at path in call.
func (f *Formula) param(call, path string) (int64, bool) {
	raw, why := jsonbound.Lookup(call, path)
	if why != 0 {
		return 0, false
	}
	return Quantity(raw)
}

// Apply is the formula at v; Max when !ok or v is negative. Exact
// without overflow for a formula Check accepts and any v.
func (f *Formula) Apply(v int64, ok bool) int64 {
	if !ok || v < 0 || v > MaxValue {
		return f.Max
	}
	q := v / f.Every
	if v%f.Every != 0 {
		q++
	}
	// base + per×q > max exactly when q > (max − base) / per (integer
	// division), for per > 0 and max >= base.
	if f.Per > 0 && (f.Max < f.Base || q > (f.Max-f.Base)/f.Per) {
		return f.Max
	}
	return min(max(f.Base+f.Per*q, f.Min), f.Max)
}

// Quantity reads a value of a param's JSON text: a non-negative JSON
// integer written without fraction or exponent, or a string "0x" and hex
// digits (an Ethereum QUANTITY; leading zeros allowed), of at most 20
// digits and at most 2^53; ok is false for anything else.
func Quantity(raw string) (v int64, ok bool) {
	digits, base := raw, int64(10)
	if len(raw) >= 4 && raw[0] == '"' && raw[1] == '0' && raw[2] == 'x' && raw[len(raw)-1] == '"' {
		digits, base = raw[3:len(raw)-1], 16
	}
	if digits == "" || len(digits) > 20 {
		return 0, false
	}
	for k := 0; k < len(digits); k++ {
		d := hexDigit(digits[k])
		if d < 0 || d >= base {
			return 0, false
		}
		if v = v*base + d; v > MaxValue {
			return 0, false
		}
	}
	return v, true
}

// hexDigit is c's value as a hex digit, or -1.
func hexDigit(c byte) int64 {
	switch {
	case c >= '0' && c <= '9':
		return int64(c - '0')
	case c >= 'a' && c <= 'f':
		return int64(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int64(c-'A') + 10
	}
	return -1
}
