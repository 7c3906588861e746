// Package redisproto encodes Redis commands and decodes Redis replies in the
// RESP2 and RESP3 wire protocols.
//
// Encoding is append-style: each Append function appends one protocol element
// to dst and returns the extended slice, allocating only when dst must grow.
//
//	buf = redisproto.AppendCommand(buf[:0], "EVALSHA", sha, "1", key)
//
// Decoding is strict and never panics. A Decoder decodes exactly one reply
// from the front of a byte slice and reports how many bytes it used. If the
// bytes are a proper prefix of a valid reply it returns ErrIncomplete, and
// the caller should retry with more bytes; if they can never become a valid
// reply it returns an error wrapping ErrMalformed. Nesting depth, declared
// lengths and the number of values per reply are bounded by Limits.
//
// Decoded values alias the input: Value.Str points into the decoded bytes,
// and a reused Decoder overwrites the previous reply's aggregate elements.
// Copy what must outlive the next Decode or a change to the input.
package redisproto

import (
	"strconv"
	"strings"
)

// Kind is the type of a RESP value.
type Kind uint8

// The RESP value kinds. The comment gives each kind's type byte.
const (
	KindSimpleString Kind = iota + 1 // +
	KindError                        // -
	KindInteger                      // :
	KindBulkString                   // $
	KindArray                        // *
	KindNull                         // $-1, *-1 (RESP2) and _ (RESP3)
	KindBool                         // #
	KindDouble                       // ,
	KindBigNumber                    // (
	KindBlobError                    // !
	KindVerbatim                     // =
	KindMap                          // %
	KindSet                          // ~
	KindPush                         // >
)

var kindNames = [...]string{
	KindSimpleString: "simple string",
	KindError:        "error",
	KindInteger:      "integer",
	KindBulkString:   "bulk string",
	KindArray:        "array",
	KindNull:         "null",
	KindBool:         "boolean",
	KindDouble:       "double",
	KindBigNumber:    "big number",
	KindBlobError:    "blob error",
	KindVerbatim:     "verbatim string",
	KindMap:          "map",
	KindSet:          "set",
	KindPush:         "push",
}

// String returns the kind's name as the RESP specification spells it,
// such as "bulk string".
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is one decoded RESP value. Which fields are meaningful depends on Kind.
type Value struct {
	Kind Kind

	// Format is the three-byte format of a KindVerbatim value, such as
	// "txt" or "mkd". It sits here, beside Kind, to fill padding.
	Format [3]byte

	// Str is the payload of KindSimpleString, KindError, KindBulkString,
	// KindBigNumber (its digits), KindBlobError and KindVerbatim (the text
	// after the "xxx:" format prefix). It aliases the decoded input.
	Str []byte

	// Int is the value of KindInteger, and 1 or 0 for KindBool.
	Int int64

	// Float is the value of KindDouble, possibly ±Inf or NaN.
	Float float64

	// Elems holds the elements of KindArray, KindSet and KindPush, and the
	// flattened key, value, key, value... pairs of KindMap.
	Elems []Value

	// Attrs holds the flattened pairs of the RESP3 attributes that preceded
	// this value, or nil if there were none.
	Attrs []Value
}

// Int64 returns the value of an integer.
func (v Value) Int64() (int64, error) {
	if v.Kind != KindInteger {
		return 0, v.kindError("Int64", "integer")
	}
	return v.Int, nil
}

// Text returns a copy of the payload of a simple string, bulk string,
// verbatim string or big number.
func (v Value) Text() (string, error) {
	if !v.isText() {
		return "", v.kindError("Text", textKinds)
	}
	return string(v.Str), nil
}

// Bytes is like Text but returns the payload without copying it.
func (v Value) Bytes() ([]byte, error) {
	if !v.isText() {
		return nil, v.kindError("Bytes", textKinds)
	}
	return v.Str, nil
}

const textKinds = "simple string, bulk string, verbatim string or big number"

func (v Value) isText() bool {
	switch v.Kind {
	case KindSimpleString, KindBulkString, KindVerbatim, KindBigNumber:
		return true
	}
	return false
}

// Float64 returns the value of a double or an integer.
func (v Value) Float64() (float64, error) {
	switch v.Kind {
	case KindDouble:
		return v.Float, nil
	case KindInteger:
		return float64(v.Int), nil
	}
	return 0, v.kindError("Float64", "double or integer")
}

// Bool returns the value of a RESP3 boolean.
func (v Value) Bool() (bool, error) {
	if v.Kind != KindBool {
		return false, v.kindError("Bool", "boolean")
	}
	return v.Int != 0, nil
}

// Array returns the elements of an array, set or push.
func (v Value) Array() ([]Value, error) {
	switch v.Kind {
	case KindArray, KindSet, KindPush:
		return v.Elems, nil
	}
	return nil, v.kindError("Array", "array, set or push")
}

// Map returns the flattened key, value... pairs of a map, or of an array
// of even length (the RESP2 form of a map).
func (v Value) Map() ([]Value, error) {
	switch {
	case v.Kind == KindMap:
		return v.Elems, nil
	case v.Kind == KindArray && len(v.Elems)%2 == 0:
		return v.Elems, nil
	case v.Kind == KindArray:
		return nil, &kindError{op: "Map", want: "map or array of even length", got: "array of odd length"}
	}
	return nil, v.kindError("Map", "map or array of even length")
}

// IsNull reports whether v is a null (RESP2 $-1 or *-1, or RESP3 _).
func (v Value) IsNull() bool { return v.Kind == KindNull }

// Err returns the Redis error carried by an error or blob error value as
// an *Error, and nil for every other kind.
func (v Value) Err() error {
	if v.Kind != KindError && v.Kind != KindBlobError {
		return nil
	}
	return &Error{Msg: string(v.Str)}
}

func (v Value) kindError(op, want string) error {
	return &kindError{op: op, want: want, got: v.Kind.String(), reply: v.Err()}
}

// kindError reports a typed accessor applied to a value of another kind.
// If that value was a Redis error reply, it wraps it as an *Error.
type kindError struct {
	op, want, got string
	reply         error
}

func (e *kindError) Error() string {
	s := "redisproto: " + e.op + ": got " + e.got + ", want " + e.want
	if e.reply != nil {
		s += " (" + e.reply.Error() + ")"
	}
	return s
}

func (e *kindError) Unwrap() error { return e.reply }

// Error is a Redis error reply, such as
// "NOSCRIPT No matching script. Please use EVAL.".
type Error struct {
	Msg string // the reply's text, without the leading '-'
}

// Error returns the reply's text unchanged.
func (e *Error) Error() string { return e.Msg }

// Prefix returns the first word of the message, by convention the error
// code: "ERR", "NOSCRIPT", "WRONGTYPE" and so on.
func (e *Error) Prefix() string {
	if i := strings.IndexByte(e.Msg, ' '); i >= 0 {
		return e.Msg[:i]
	}
	return e.Msg
}

// String renders v for debugging, in the spirit of redis-cli:
// `[1 "abc" (error) NOSCRIPT ...]`. Maps render as {k: v, ...}, sets as
// ~[...], pushes as >[...] and attributes as |{k: v}| before their value.
func (v Value) String() string { return string(appendDebug(nil, v)) }

func appendDebug(dst []byte, v Value) []byte {
	if len(v.Attrs) > 0 {
		dst = append(dst, '|')
		dst = appendDebugPairs(dst, v.Attrs)
		dst = append(dst, "| "...)
	}
	switch v.Kind {
	case KindSimpleString, KindBigNumber:
		dst = append(dst, v.Str...)
	case KindError, KindBlobError:
		dst = append(dst, "(error) "...)
		dst = append(dst, v.Str...)
	case KindInteger:
		dst = strconv.AppendInt(dst, v.Int, 10)
	case KindBulkString, KindVerbatim:
		dst = strconv.AppendQuote(dst, string(v.Str))
	case KindNull:
		dst = append(dst, "(nil)"...)
	case KindBool:
		dst = strconv.AppendBool(dst, v.Int != 0)
	case KindDouble:
		dst = strconv.AppendFloat(dst, v.Float, 'g', -1, 64)
	case KindArray, KindSet, KindPush:
		if v.Kind == KindSet {
			dst = append(dst, '~')
		} else if v.Kind == KindPush {
			dst = append(dst, '>')
		}
		dst = append(dst, '[')
		for i, e := range v.Elems {
			if i > 0 {
				dst = append(dst, ' ')
			}
			dst = appendDebug(dst, e)
		}
		dst = append(dst, ']')
	case KindMap:
		dst = appendDebugPairs(dst, v.Elems)
	default:
		dst = append(dst, v.Kind.String()...)
	}
	return dst
}

func appendDebugPairs(dst []byte, kv []Value) []byte {
	dst = append(dst, '{')
	for i, e := range kv {
		switch {
		case i%2 == 1:
			dst = append(dst, ": "...)
		case i > 0:
			dst = append(dst, ", "...)
		}
		dst = appendDebug(dst, e)
	}
	return append(dst, '}')
}
