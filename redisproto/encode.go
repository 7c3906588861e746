package redisproto

import (
	"math"
	"strconv"
)

// Every Append function appends one RESP element to dst and returns the
// extended slice. None allocates unless dst lacks capacity.

// AppendArrayLen appends an array header, "*<n>\r\n". The caller appends
// the n elements. n = -1 writes the RESP2 null array.
func AppendArrayLen(dst []byte, n int) []byte { return appendHeader(dst, '*', n) }

// AppendMapLen appends a RESP3 map header for n key-value pairs.
func AppendMapLen(dst []byte, n int) []byte { return appendHeader(dst, '%', n) }

// AppendSetLen appends a RESP3 set header for n elements.
func AppendSetLen(dst []byte, n int) []byte { return appendHeader(dst, '~', n) }

// AppendPushLen appends a RESP3 push header for n elements.
func AppendPushLen(dst []byte, n int) []byte { return appendHeader(dst, '>', n) }

// AppendAttributeLen appends a RESP3 attribute header for n key-value
// pairs. The attribute applies to the value that follows the pairs.
func AppendAttributeLen(dst []byte, n int) []byte { return appendHeader(dst, '|', n) }

// AppendBulk appends b as a bulk string, "$<len>\r\n<b>\r\n".
func AppendBulk(dst, b []byte) []byte { return appendBlob(dst, '$', b) }

// AppendBulkString appends s as a bulk string.
func AppendBulkString(dst []byte, s string) []byte { return appendBlob(dst, '$', s) }

// AppendBulkInt appends the decimal form of v as a bulk string, the way
// command arguments are sent: 42 becomes "$2\r\n42\r\n".
func AppendBulkInt(dst []byte, v int64) []byte {
	var buf [20]byte // len("-9223372036854775808")
	return appendBlob(dst, '$', strconv.AppendInt(buf[:0], v, 10))
}

// AppendCommand appends a command, an array of bulk strings, growing dst
// at most once.
func AppendCommand(dst []byte, args ...string) []byte {
	size := 3 + decLen(len(args))
	for _, a := range args {
		size += 5 + decLen(len(a)) + len(a)
	}
	if cap(dst)-len(dst) < size {
		dst = append(make([]byte, 0, len(dst)+size), dst...)
	}
	dst = appendHeader(dst, '*', len(args))
	for _, a := range args {
		dst = appendBlob(dst, '$', a)
	}
	return dst
}

// decLen returns the number of decimal digits of n >= 0.
func decLen(n int) int {
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}

// AppendSimpleString appends s as a simple string, "+<s>\r\n". Simple
// strings cannot hold CR or LF, so each is written as a space.
func AppendSimpleString(dst []byte, s string) []byte { return appendLine(dst, '+', s) }

// AppendError appends an error reply, "-<msg>\r\n", with CR and LF written
// as spaces.
func AppendError(dst []byte, msg string) []byte { return appendLine(dst, '-', msg) }

// AppendInt appends an integer, ":<v>\r\n".
func AppendInt(dst []byte, v int64) []byte {
	dst = append(dst, ':')
	dst = strconv.AppendInt(dst, v, 10)
	return append(dst, '\r', '\n')
}

// AppendNullBulk appends the RESP2 null bulk string, "$-1\r\n".
func AppendNullBulk(dst []byte) []byte { return append(dst, "$-1\r\n"...) }

// AppendNull appends the RESP3 null, "_\r\n".
func AppendNull(dst []byte) []byte { return append(dst, "_\r\n"...) }

// AppendBool appends a RESP3 boolean, "#t\r\n" or "#f\r\n".
func AppendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, "#t\r\n"...)
	}
	return append(dst, "#f\r\n"...)
}

// AppendDouble appends a RESP3 double in its shortest exact decimal form,
// or as inf, -inf or nan.
func AppendDouble(dst []byte, f float64) []byte {
	dst = append(dst, ',')
	switch {
	case math.IsInf(f, 1):
		dst = append(dst, "inf"...)
	case math.IsInf(f, -1):
		dst = append(dst, "-inf"...)
	case math.IsNaN(f):
		dst = append(dst, "nan"...)
	default:
		dst = strconv.AppendFloat(dst, f, 'g', -1, 64)
	}
	return append(dst, '\r', '\n')
}

// AppendBigNumber appends a RESP3 big number. s must be a base-10 integer
// with an optional leading '-'; it is not checked.
func AppendBigNumber(dst []byte, s string) []byte { return appendLine(dst, '(', s) }

// AppendBlobError appends a RESP3 blob error, "!<len>\r\n<msg>\r\n".
func AppendBlobError(dst []byte, msg string) []byte { return appendBlob(dst, '!', msg) }

// AppendVerbatim appends a RESP3 verbatim string, "=<len>\r\n<format>:<text>\r\n".
// format must be three bytes, such as "txt" or "mkd"; any other length is
// replaced by "txt" so that the output stays well-formed.
func AppendVerbatim(dst []byte, format, text string) []byte {
	if len(format) != 3 {
		format = "txt"
	}
	return appendVerbatim(dst, format, text)
}

func appendVerbatim[S ~string | ~[]byte](dst []byte, format, text S) []byte {
	dst = appendHeader(dst, '=', len(format)+1+len(text))
	dst = append(dst, format...)
	dst = append(dst, ':')
	dst = append(dst, text...)
	return append(dst, '\r', '\n')
}

// AppendValue appends v, attributes included, as a decoder would read it
// back. A null is written as "$-1\r\n", which RESP2 and RESP3 readers both
// accept. A map or attribute list of odd length loses its last value, and a
// Value of unknown Kind, such as the zero Value, is written as a null.
func AppendValue(dst []byte, v Value) []byte {
	if len(v.Attrs) >= 2 {
		dst = appendHeader(dst, '|', len(v.Attrs)/2)
		dst = appendValues(dst, v.Attrs[:len(v.Attrs)&^1])
	}
	switch v.Kind {
	case KindSimpleString:
		return appendLine(dst, '+', v.Str)
	case KindError:
		return appendLine(dst, '-', v.Str)
	case KindInteger:
		return AppendInt(dst, v.Int)
	case KindBulkString:
		return appendBlob(dst, '$', v.Str)
	case KindArray, KindSet, KindPush:
		dst = appendHeader(dst, aggregateByte(v.Kind), len(v.Elems))
		return appendValues(dst, v.Elems)
	case KindMap:
		dst = appendHeader(dst, '%', len(v.Elems)/2)
		return appendValues(dst, v.Elems[:len(v.Elems)&^1])
	case KindBool:
		return AppendBool(dst, v.Int != 0)
	case KindDouble:
		return AppendDouble(dst, v.Float)
	case KindBigNumber:
		return appendLine(dst, '(', v.Str)
	case KindBlobError:
		return appendBlob(dst, '!', v.Str)
	case KindVerbatim:
		return appendVerbatim(dst, v.Format[:], v.Str)
	}
	return AppendNullBulk(dst)
}

func appendValues(dst []byte, vs []Value) []byte {
	for _, e := range vs {
		dst = AppendValue(dst, e)
	}
	return dst
}

func aggregateByte(k Kind) byte {
	switch k {
	case KindSet:
		return '~'
	case KindPush:
		return '>'
	}
	return '*'
}

// appendHeader appends "<c><n>\r\n".
func appendHeader(dst []byte, c byte, n int) []byte {
	if uint(n) < 10 { // the common case, one append instead of four
		return append(dst, c, '0'+byte(n), '\r', '\n')
	}
	dst = append(dst, c)
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, '\r', '\n')
}

// appendBlob appends a length-prefixed string, "<c><len>\r\n<s>\r\n".
func appendBlob[S ~string | ~[]byte](dst []byte, c byte, s S) []byte {
	dst = appendHeader(dst, c, len(s))
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// appendLine appends "<c><s>\r\n", with any CR or LF of s written as a
// space, since a line-delimited element cannot contain them.
func appendLine[S ~string | ~[]byte](dst []byte, c byte, s S) []byte {
	dst = append(dst, c)
	start := len(dst)
	dst = append(dst, s...)
	for i := start; i < len(dst); i++ {
		if dst[i] == '\r' || dst[i] == '\n' {
			dst[i] = ' '
		}
	}
	return append(dst, '\r', '\n')
}
