package format

import (
	"strconv"
	"unicode/utf8"
)

// appendValue appends arg as fmt prints it with verb, for the types the
// package knows; an error or a Stringer prints as its text, as fmt's %v,
// %s and %q do, but not its %d.
func appendValue(b []byte, verb byte, arg any) []byte {
	if arg == nil { // a nil error, say: fmt prints "<nil>", or "%!s(<nil>)"
		if verb == 'v' {
			return append(b, "<nil>"...)
		}
		return append(append(append(b, "%!"...), verb), "(<nil>)"...)
	}
	switch verb {
	case 'v', 's', 'q', 'w':
		switch v := arg.(type) {
		case string:
			return appendText(b, verb, v)
		case []byte:
			if verb != 'v' {
				return appendText(b, verb, string(v))
			}
		case error:
			return appendText(b, verb, v.Error())
		case interface{ String() string }:
			return appendText(b, verb, v.String())
		}
	}
	if i, ok := intOf(arg); ok {
		switch verb {
		case 'v', 'd':
			if i.neg {
				b = append(b, '-')
			}
			return strconv.AppendUint(b, i.abs, 10)
		case 'q': // a character literal
			r := utf8.RuneError
			if !i.neg && i.abs <= utf8.MaxRune {
				r = rune(i.abs)
			}
			return strconv.AppendQuoteRune(b, r)
		}
	}
	switch v := arg.(type) {
	case bool:
		if verb == 'v' || verb == 't' {
			return strconv.AppendBool(b, v)
		}
	case float64:
		if verb == 'v' {
			return strconv.AppendFloat(b, v, 'g', -1, 64)
		}
	case float32:
		if verb == 'v' {
			return strconv.AppendFloat(b, float64(v), 'g', -1, 32)
		}
	case []int64:
		if verb == 'v' || verb == 'd' {
			b = append(b, '[')
			for i, x := range v {
				if i > 0 {
					b = append(b, ' ')
				}
				b = strconv.AppendInt(b, x, 10)
			}
			return append(b, ']')
		}
	}
	return append(append(append(b, "%!"...), verb), "(?)"...)
}

func appendText(b []byte, verb byte, s string) []byte {
	if verb == 'q' {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}

// integer is an integer of any basic type, as its sign and magnitude.
type integer struct {
	neg bool
	abs uint64
}

func intOf(arg any) (integer, bool) {
	switch v := arg.(type) {
	case int:
		return signed(int64(v)), true
	case int8:
		return signed(int64(v)), true
	case int16:
		return signed(int64(v)), true
	case int32:
		return signed(int64(v)), true
	case int64:
		return signed(v), true
	case uint:
		return integer{abs: uint64(v)}, true
	case uint8:
		return integer{abs: uint64(v)}, true
	case uint16:
		return integer{abs: uint64(v)}, true
	case uint32:
		return integer{abs: uint64(v)}, true
	case uint64:
		return integer{abs: v}, true
	case uintptr:
		return integer{abs: uint64(v)}, true
	}
	return integer{}, false
}

func signed(v int64) integer {
	if v < 0 {
		return integer{neg: true, abs: uint64(-v)} // -MinInt64 wraps to its magnitude
	}
	return integer{abs: uint64(v)}
}
