package jsonbound

import "errors"

// A request body is read as the upstream's parser will read it (Python's
// json.loads on bytes, Go's encoding/json, JavaScript's JSON.parse), or
// refused where they disagree or the filter cannot read it:
//
//   - A leading UTF-8 BOM is skipped (Python skips it; Go and JavaScript
//     refuse the body, so no parser reads another value).
//   - NaN, Infinity and -Infinity are numbers (Python reads them; the
//     others refuse the body).
//   - A duplicate key's last value is read (Lookup).
//
// Refused: a body that is not one JSON text or is truncated, nested deeper
// than MaxDepth, UTF-16 or UTF-32 (Python reads it, the others do not),
// with invalid UTF-8 in a string (Python refuses it, Go reads U+FFFD) or
// a lone surrogate escape such as "\ud800" (Python keeps it, Go reads
// U+FFFD). Lookup refuses a path whose object holds a key equal to a name
// of the path but for case (Go's encoding/json fills a struct's field
// from any case), or holds a name more than once with more of the path
// to go (Go merges the objects into one struct, Python keeps the last).

// Refusal is why a request body, or a path in it, is not read; 0 when it
// is.
type Refusal uint8

const (
	RefuseTooLarge        Refusal = iota + 1 // larger than its bound (set by the caller)
	RefuseSyntax                             // not one JSON text, or truncated
	RefuseTooDeep                            // nested deeper than MaxDepth
	RefuseEncoding                           // UTF-16 or UTF-32
	RefuseUTF8                               // a string is not valid UTF-8
	RefuseSurrogate                          // a lone UTF-16 surrogate escape
	RefuseCaseVariant                        // a key differs from a path's name only in case
	RefuseDuplicateParent                    // an object on a path is given twice
	RefuseBigInteger                         // an integer past 2^53: float64 parsers round it
	RefuseLate                               // the body did not come within the wait (set by the caller)
	RefuseNotJSONRPC                         // not a JSON-RPC request or batch (set by the caller)
	RefuseTooManyCalls                       // a batch of more calls than its bound (set by the caller)
)

var refusalText = [...]string{
	RefuseTooLarge:        "larger than max_request_body_bytes",
	RefuseSyntax:          "not JSON or truncated",
	RefuseTooDeep:         "nested deeper than 64",
	RefuseEncoding:        "UTF-16 or UTF-32",
	RefuseUTF8:            "invalid UTF-8",
	RefuseSurrogate:       "lone surrogate escape",
	RefuseCaseVariant:     "a key differs from a field's name only in case",
	RefuseDuplicateParent: "duplicate object on a field's path",
	RefuseBigInteger:      "an integer past 2^53",
	RefuseLate:            "the body did not come in time",
	RefuseNotJSONRPC:      "not a JSON-RPC request",
	RefuseTooManyCalls:    "more than max_calls calls",
}

// String says why, as the local reply's "reason" does.
func (r Refusal) String() string {
	if int(r) < len(refusalText) && refusalText[r] != "" {
		return refusalText[r]
	}
	return "readable"
}

// The errors of a body's strings, beside the sentinels of jsonbound.go.
var (
	errUTF8      = errors.New("jsonbound: invalid UTF-8")
	errSurrogate = errors.New("jsonbound: lone surrogate escape")
)

// ReadBody checks a non-empty request body in one pass, without recursion
// or allocation, and returns its JSON text (without a leading UTF-8 BOM)
// for Lookup, or why it is refused.
func ReadBody(b []byte) ([]byte, Refusal) {
	if len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		b = b[3:]
	}
	if wide(b) {
		return nil, RefuseEncoding
	}
	switch check(b, true).err {
	case nil:
		return b, 0
	case ErrTooDeep:
		return nil, RefuseTooDeep
	case errUTF8:
		return nil, RefuseUTF8
	case errSurrogate:
		return nil, RefuseSurrogate
	}
	return nil, RefuseSyntax
}

// wide reports a UTF-16 or UTF-32 body, as Python's json.detect_encoding
// finds one: its BOM, or a NUL in the first four bytes.
func wide(b []byte) bool {
	if len(b) >= 2 && (b[0] == 0xFE && b[1] == 0xFF || b[0] == 0xFF && b[1] == 0xFE) {
		return true
	}
	for k := 0; k < len(b) && k < 4; k++ {
		if b[k] == 0 {
			return true
		}
	}
	return false
}

// skipNonFinite skips NaN, Infinity or -Infinity at i.
func skipNonFinite[T ~string | ~[]byte](b T, i int) (int, error) {
	switch b[i] {
	case 'N':
		return skipWord(b, i, "NaN")
	case 'I':
		return skipWord(b, i, "Infinity")
	}
	return skipWord(b, i, "-Infinity")
}

// lowSurrogate checks, at i just after the escape of surrogate r, that r
// is a high surrogate followed by the escape of a low one, and skips it.
func lowSurrogate[T ~string | ~[]byte](b T, i int, r rune) (int, error) {
	if r >= 0xDC00 {
		return i, errSurrogate
	}
	if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
		lo, at, err := hex4(b, i+2)
		switch {
		case err != nil:
			return at, err
		case lo >= 0xDC00 && lo <= 0xDFFF:
			return i + 6, nil
		}
	} else if i == len(b) || b[i] == '\\' && i+1 == len(b) {
		return i, ErrTruncated
	}
	return i, errSurrogate
}

// hex4 reads the four hex digits of a \u escape at i; at is where a
// digit is missing or wrong.
func hex4[T ~string | ~[]byte](b T, i int) (r rune, at int, err error) {
	for k := i; k < i+4; k++ {
		if k >= len(b) {
			return 0, k, ErrTruncated
		}
		c := b[k]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, k, ErrSyntax
		}
		r = r<<4 | rune(c)
	}
	return r, i + 4, nil
}

// utf8Len is the length of the valid UTF-8 sequence at b[i] (a byte
// >= 0x80), or 0: no overlong form, surrogate, or code point past U+10FFFF.
func utf8Len[T ~string | ~[]byte](b T, i int) int {
	n, lo, hi := 0, byte(0x80), byte(0xBF)
	switch c := b[i]; {
	case c >= 0xC2 && c <= 0xDF:
		n = 2
	case c == 0xE0:
		n, lo = 3, 0xA0
	case c == 0xED:
		n, hi = 3, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		n = 3
	case c == 0xF0:
		n, lo = 4, 0x90
	case c >= 0xF1 && c <= 0xF3:
		n = 4
	case c == 0xF4:
		n, hi = 4, 0x8F
	default:
		return 0
	}
	if i+n > len(b) || b[i+1] < lo || b[i+1] > hi {
		return 0
	}
	for k := i + 2; k < i+n; k++ {
		if b[k] < 0x80 || b[k] > 0xBF {
			return 0
		}
	}
	return n
}
