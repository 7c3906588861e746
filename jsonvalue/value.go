// Package jsonvalue reads values out of JSON text by dotted path: the
// configuration, a request body's field, a claim of a JWT, the usage in a
// response or a server-sent event, a Webdis reply. It reads them as gjson
// 1.18 read them (the filter's reader before this package), for the part
// of gjson the filter uses: a path is names joined by ".", "\" makes the
// next byte part of a name, a name that is a number indexes an array, and
// the first member whose value holds the rest of the path wins. No
// wildcards, queries, modifiers or pipes: every other byte is literal.
//
// Input is meant to be checked by package jsonbound first, but any bytes
// are safe: every call takes time linear in its input, without recursion,
// and never panics; invalid JSON gives what gjson gave where a caller could
// tell.
package jsonvalue

import (
	"strconv"
	"strings"
)

// Type is the kind of a JSON value.
type Type int

// The kinds, in gjson's order: the zero Value is a Null that does not exist.
const (
	Null Type = iota
	False
	Number
	String
	True
	JSON // an object or an array, in Raw
)

// Value is a JSON value read from a text.
type Value struct {
	Type  Type
	Raw   string  // the value's JSON text; "" when absent
	Str   string  // a string's text, unescaped
	Num   float64 // a number's value
	Index int     // where Raw starts in the text read; 0 when unknown
}

// Exists reports whether the value was found.
func (v Value) Exists() bool { return v.Type != Null || v.Raw != "" }

// IsObject reports whether v is a JSON object.
func (v Value) IsObject() bool { return v.Type == JSON && v.Raw != "" && v.Raw[0] == '{' }

// IsArray reports whether v is a JSON array.
func (v Value) IsArray() bool { return v.Type == JSON && v.Raw != "" && v.Raw[0] == '[' }

// String is v as text: a string's text, a boolean's word, an integer as
// written and any other number by its value, an object's or array's JSON.
func (v Value) String() string {
	switch v.Type {
	case False:
		return "false"
	case True:
		return "true"
	case String:
		return v.Str
	case JSON:
		return v.Raw
	case Number:
		if _, ok := digits(v.Raw, true); ok || v.Raw == "-" {
			return v.Raw
		}
		return strconv.FormatFloat(v.Num, 'f', -1, 64)
	}
	return ""
}

// Bool is v as a boolean: true, a non-zero number, or a string
// strconv.ParseBool takes for true in any case.
func (v Value) Bool() bool {
	switch v.Type {
	case True:
		return true
	case String:
		b, _ := strconv.ParseBool(strings.ToLower(v.Str))
		return b
	case Number:
		return v.Num != 0
	}
	return false
}

// Int is v as an int64: a number within ±(2^53-1) truncated, else its
// text if that is a plain integer (wrapping past int64), else the float
// converted; a string holding a plain integer; true is 1.
func (v Value) Int() int64 {
	switch v.Type {
	case True:
		return 1
	case String:
		n, _ := digits(v.Str, true)
		return n
	case Number:
		if safe(v.Num) {
			return int64(v.Num)
		}
		if n, ok := digits(v.Raw, true); ok {
			return n
		}
		return int64(v.Num)
	}
	return 0
}

// Uint is v as a uint64, as Int reads it but without a sign.
func (v Value) Uint() uint64 {
	switch v.Type {
	case True:
		return 1
	case String:
		n, _ := digits(v.Str, false)
		return uint64(n)
	case Number:
		if safe(v.Num) && v.Num > -1 {
			return uint64(int64(v.Num))
		}
		if n, ok := digits(v.Raw, false); ok {
			return uint64(n)
		}
		return uint64(v.Num)
	}
	return 0
}

// Float is v as a float64: a number's value, a string strconv parses, true
// is 1.
func (v Value) Float() float64 {
	switch v.Type {
	case True:
		return 1
	case String:
		f, _ := strconv.ParseFloat(v.Str, 64)
		return f
	case Number:
		return v.Num
	}
	return 0
}

// safe reports whether f does not lie beyond ±(2^53-1), where a float64
// holds every integer (NaN is not beyond).
func safe(f float64) bool { return !(f < -9007199254740991 || f > 9007199254740991) }

// digits reads s as a plain decimal integer (with a leading '-' when signed
// is set), wrapping on overflow as gjson did; ok is false for anything else.
func digits(s string, signed bool) (n int64, ok bool) {
	neg := signed && s != "" && s[0] == '-'
	if neg {
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	var u uint64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		u = u*10 + uint64(s[i]-'0')
	}
	if neg {
		return -int64(u), true
	}
	return int64(u), true
}
