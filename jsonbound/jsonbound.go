// Package jsonbound checks that bytes are one JSON text (RFC 8259) that
// is safe to read: nested at most MaxDepth deep and at most MaxSize long.
// It reads the input once, without recursion and without allocating: the
// containers open at any point fit in one 64-bit word. Check's refusal
// says where, by line and column, and what was wrong: that is worked out
// only once the input is refused.
//
// ReadBody and Lookup (body.go, lookup.go) read a request body as the
// upstream's parser will: the last of duplicate keys, a UTF-8 BOM
// skipped, NaN and Infinity numbers, or a refusal with its reason where
// the parsers disagree. Members (members.go) reads several of an
// object's members as Lookup reads each, in one scan.
//
// gjson's Valid (the filter's reader before package jsonvalue) recursed
// once or twice per level of nesting, so 10,000 levels (20 KB of '[')
// overflowed V8's stack, and a Wasm VM that traps serves nothing more.
package jsonbound

import "errors"

// MaxDepth is how deeply arrays and objects may nest: [[1]] is 2 deep, a
// scalar 0. A request or a response worth reading nests a few levels;
// 64 leaves room for any of them and fits the stack in one uint64.
const MaxDepth = 64

// MaxSize is the largest input checked, in bytes: the largest
// response_cost.max_body_bytes (64 MiB).
const MaxSize = 64 << 20

// The errors keep invalid input apart from incomplete input.
var (
	ErrTooLarge  = errors.New("jsonbound: larger than 64 MiB")
	ErrTooDeep   = errors.New("jsonbound: nested deeper than 64")
	ErrSyntax    = errors.New("jsonbound: invalid JSON")
	ErrTruncated = errors.New("jsonbound: unexpected end of JSON")
)

// Valid reports whether data is one JSON value within the bounds.
func Valid(data []byte) bool { return check(data, false).err == nil }

// ValidString is Valid for a string.
func ValidString(s string) bool { return check(s, false).err == nil }

// Check returns nil if data is one JSON value within the bounds, or the
// first reason it is not: ErrTooLarge, or a *SyntaxError saying where,
// which errors.Is matches to ErrSyntax, ErrTruncated or ErrTooDeep.
func Check(data []byte) error {
	f := check(data, false)
	if f.err == nil || f.err == ErrTooLarge {
		return f.err
	}
	return describe(data, f)
}

// What the checker expects next.
const (
	wantValue  = iota // a value
	wantKey           // an object's key
	wantColon         // the ':' after an object's key (only in a fault)
	afterValue        // ',', the container's end, or the input's end
)

// fault is where and why check refused its input; err is nil when it did
// not. It is a value, so that checking allocates nothing.
type fault struct {
	err    error // a sentinel
	at     int   // the offset of the byte refused; len(input) at its end
	state  int   // what the checker expected there
	object bool  // the innermost open container is an object
	depth  int   // containers open there
	token  int   // where the string, number or literal it was in begins; -1 outside one
}

// check reads b as RFC 8259 JSON or, with body, as a request body an
// upstream reads (body.go): NaN, Infinity and -Infinity are values, and
// strings must be valid UTF-8 without lone surrogate escapes.
func check[T ~string | ~[]byte](b T, body bool) fault {
	if len(b) > MaxSize {
		return fault{err: ErrTooLarge, token: -1}
	}
	// stack's bit d is set when the container at depth d+1 is an object;
	// 0 <= depth <= MaxDepth.
	var stack uint64
	depth := 0
	state := wantValue
	i := 0
	for {
		i = skipSpace(b, i)
		if i == len(b) {
			if depth == 0 && state == afterValue {
				return fault{}
			}
			return failAt(ErrTruncated, i, state, stack, depth)
		}
		c := b[i]
		var err error
		start := i
		switch state {
		case wantValue:
			switch {
			case c == '{' || c == '[':
				if depth == MaxDepth {
					return failAt(ErrTooDeep, i, state, stack, depth)
				}
				stack &^= 1 << depth
				if c == '{' {
					stack |= 1 << depth
				}
				depth++
				if i = skipSpace(b, i+1); i < len(b) && b[i] == c+2 { // '}' or ']'
					i, depth, state = i+1, depth-1, afterValue
				} else if c == '{' {
					state = wantKey
				}
				continue
			case c == '"':
				i, err = skipString(b, i+1, body)
			case body && (c == 'N' || c == 'I' || c == '-' && i+1 < len(b) && b[i+1] == 'I'):
				i, err = skipNonFinite(b, i)
			case c == 't':
				i, err = skipWord(b, i, "true")
			case c == 'f':
				i, err = skipWord(b, i, "false")
			case c == 'n':
				i, err = skipWord(b, i, "null")
			case c == '-' || c >= '0' && c <= '9':
				i, err = skipNumber(b, i)
			default:
				return failAt(ErrSyntax, i, state, stack, depth)
			}
			if err != nil {
				f := failAt(err, i, state, stack, depth)
				f.token = start
				return f
			}
			state = afterValue
		case wantKey:
			if c != '"' {
				return failAt(ErrSyntax, i, state, stack, depth)
			}
			if i, err = skipString(b, i+1, body); err != nil {
				f := failAt(err, i, state, stack, depth)
				f.token = start
				return f
			}
			if i = skipSpace(b, i); i == len(b) || b[i] != ':' {
				state = wantColon
				if i == len(b) {
					return failAt(ErrTruncated, i, state, stack, depth)
				}
				return failAt(ErrSyntax, i, state, stack, depth)
			}
			i, state = i+1, wantValue
		case afterValue:
			if depth == 0 {
				return failAt(ErrSyntax, i, state, stack, depth) // a second value
			}
			object := stack>>(depth-1)&1 == 1
			switch {
			case c == ',' && object:
				i, state = i+1, wantKey
			case c == ',':
				i, state = i+1, wantValue
			case c == '}' && object, c == ']' && !object:
				i, depth = i+1, depth-1
			default:
				return failAt(ErrSyntax, i, state, stack, depth)
			}
		}
	}
}

// failAt is the fault of err at offset at, where the checker expected
// state with the containers of stack and depth open.
func failAt(err error, at, state int, stack uint64, depth int) fault {
	object := depth > 0 && stack>>(depth-1)&1 == 1
	return fault{err: err, at: at, state: state, object: object, depth: depth, token: -1}
}

func skipSpace[T ~string | ~[]byte](b T, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// skipString skips a string's body and its closing quote, from i just
// after the opening quote; with body, its text must be valid UTF-8 and a
// \u escape of a surrogate one of a high-low pair.
func skipString[T ~string | ~[]byte](b T, i int, body bool) (int, error) {
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			return i + 1, nil
		case c < 0x20:
			return i, ErrSyntax
		case c >= 0x80 && body:
			n := utf8Len(b, i)
			if n == 0 {
				return i, errUTF8
			}
			i += n
		case c != '\\':
			i++
		case i+1 == len(b):
			return i, ErrTruncated
		case b[i+1] == 'u':
			r, at, err := hex4(b, i+2)
			if err != nil {
				return at, err
			}
			if i += 6; body && r >= 0xD800 && r <= 0xDFFF {
				if i, err = lowSurrogate(b, i, r); err != nil {
					return i, err
				}
			}
		default:
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			default:
				return i + 1, ErrSyntax
			}
		}
	}
	return i, ErrTruncated
}

// skipWord skips the literal word at i.
func skipWord[T ~string | ~[]byte](b T, i int, word string) (int, error) {
	for k := 0; k < len(word); k++ {
		if i+k == len(b) {
			return i + k, ErrTruncated
		}
		if b[i+k] != word[k] {
			return i + k, ErrSyntax
		}
	}
	return i + len(word), nil
}

// skipNumber skips the number at i:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func skipNumber[T ~string | ~[]byte](b T, i int) (int, error) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i == len(b):
		return i, ErrTruncated
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = skipDigits(b, i)
	default:
		return i, ErrSyntax
	}
	if i < len(b) && b[i] == '.' {
		var err error
		if i, err = needDigits(b, i+1); err != nil {
			return i, err
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		return needDigits(b, i)
	}
	return i, nil
}

// needDigits skips one digit or more at i.
func needDigits[T ~string | ~[]byte](b T, i int) (int, error) {
	switch {
	case i == len(b):
		return i, ErrTruncated
	case b[i] < '0' || b[i] > '9':
		return i, ErrSyntax
	}
	return skipDigits(b, i), nil
}

func skipDigits[T ~string | ~[]byte](b T, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
