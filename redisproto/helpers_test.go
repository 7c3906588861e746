package redisproto

import "math"

// Constructors for expected values.

func simple(s string) Value { return Value{Kind: KindSimpleString, Str: []byte(s)} }
func errv(s string) Value   { return Value{Kind: KindError, Str: []byte(s)} }
func bulk(s string) Value   { return Value{Kind: KindBulkString, Str: []byte(s)} }
func num(i int64) Value     { return Value{Kind: KindInteger, Int: i} }
func dbl(f float64) Value   { return Value{Kind: KindDouble, Float: f} }
func big(s string) Value    { return Value{Kind: KindBigNumber, Str: []byte(s)} }
func blobErr(s string) Value {
	return Value{Kind: KindBlobError, Str: []byte(s)}
}
func verbatim(format, s string) Value {
	v := Value{Kind: KindVerbatim, Str: []byte(s)}
	copy(v.Format[:], format)
	return v
}
func boolean(b bool) Value {
	if b {
		return Value{Kind: KindBool, Int: 1}
	}
	return Value{Kind: KindBool}
}
func agg(k Kind, elems ...Value) Value { return Value{Kind: k, Elems: elems} }
func arr(elems ...Value) Value         { return agg(KindArray, elems...) }
func repeat(v Value, n int) []Value {
	vs := make([]Value, n)
	for i := range vs {
		vs[i] = v
	}
	return vs
}
func withAttrs(v Value, attrs ...Value) Value {
	v.Attrs = attrs
	return v
}

var null = Value{Kind: KindNull}

// equalValue reports whether a and b are the same value. Nil and empty
// slices are equal, NaN equals NaN, and Format counts only for verbatim.
func equalValue(a, b Value) bool {
	if a.Kind != b.Kind || string(a.Str) != string(b.Str) || a.Int != b.Int ||
		!equalValues(a.Elems, b.Elems) || !equalValues(a.Attrs, b.Attrs) {
		return false
	}
	if a.Kind == KindVerbatim && a.Format != b.Format {
		return false
	}
	return a.Float == b.Float || math.IsNaN(a.Float) && math.IsNaN(b.Float)
}

func equalValues(a, b []Value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !equalValue(a[i], b[i]) {
			return false
		}
	}
	return true
}
