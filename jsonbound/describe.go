package jsonbound

import (
	"strconv"
	"unicode/utf8"
)

// A SyntaxError is where and why input is not one JSON value within the
// bounds. It is built only once the input is refused: checking valid
// input allocates nothing.
type SyntaxError struct {
	Err error // ErrSyntax, ErrTruncated or ErrTooDeep
	// Offset is the byte refused: len(input) when the input ended early,
	// but an unterminated string's opening quote (cut by the end or by a
	// line break).
	Offset int
	// Line and Column place Offset, from 1; Column counts UTF-8
	// characters, a tab as one.
	Line, Column int
	// What says what was wrong there: "unexpected ']' after ','",
	// "nested deeper than 64".
	What string
}

// Error is "jsonbound: invalid JSON at line 3, column 7: unexpected ']'
// after ','", or "jsonbound: nested deeper than 64 at line 1, column 65".
func (e *SyntaxError) Error() string {
	if e.Err == ErrTooDeep {
		return e.Err.Error() + " at " + e.Position()
	}
	return ErrSyntax.Error() + " at " + e.Position() + ": " + e.What
}

// Position is "line 3, column 7".
func (e *SyntaxError) Position() string {
	return "line " + strconv.Itoa(e.Line) + ", column " + strconv.Itoa(e.Column)
}

func (e *SyntaxError) Unwrap() error { return e.Err }

// describe builds the SyntaxError for what check refused in b: one pass
// over the bytes before it, only on the error path.
func describe[T ~string | ~[]byte](b T, f fault) *SyntaxError {
	e := &SyntaxError{Err: f.err, Offset: f.at, What: what(b, f)}
	if unterminated(b, f) {
		e.Offset = f.token
	}
	e.Line, e.Column = 1, 1
	for i := 0; i < e.Offset; i++ {
		switch c := b[i]; {
		case c == '\n':
			e.Line, e.Column = e.Line+1, 1
		case c&0xC0 != 0x80: // not a UTF-8 continuation byte
			e.Column++
		}
	}
	return e
}

// what says what check found wrong.
func what[T ~string | ~[]byte](b T, f fault) string {
	switch {
	case f.err == ErrTooDeep:
		return "nested deeper than " + strconv.Itoa(MaxDepth)
	case f.token >= 0:
		return inToken(b, f)
	case f.err == ErrTruncated && f.state == afterValue:
		if f.object {
			return "unexpected end of input: missing '}'"
		}
		return "unexpected end of input: missing ']'"
	case f.err == ErrTruncated:
		return "unexpected end of input: expected " + expected(f)
	}
	found := quoted(b, f.at)
	if p := previous(b, f.at); p == ',' && (f.state == wantValue || f.state == wantKey) {
		return "unexpected " + found + " after ','"
	}
	return "expected " + expected(f) + ", found " + found
}

// inToken says what is wrong inside a string, number or literal.
func inToken[T ~string | ~[]byte](b T, f fault) string {
	name := "a number"
	switch b[f.token] {
	case '"':
		name = "a string"
	case 't':
		name = "the literal true"
	case 'f':
		name = "the literal false"
	case 'n':
		name = "the literal null"
	}
	switch {
	case unterminated(b, f) && f.err == ErrTruncated:
		return "unterminated string"
	case unterminated(b, f):
		return "unterminated string: a line break before its closing quote"
	case f.err == ErrTruncated:
		return "unexpected end of input in " + name
	case name != "a string":
		return "unexpected " + quoted(b, f.at) + " in " + name
	}
	switch escape(b, f) {
	case 'u':
		return "unexpected " + quoted(b, f.at) + " in a \\u escape"
	case '\\':
		if c := b[f.at]; c >= 0x20 && c < 0x7f {
			return "invalid escape '\\" + string(rune(c)) + "' in a string"
		}
		return "invalid escape: '\\' then " + quoted(b, f.at)
	}
	return "unescaped " + quoted(b, f.at) + " in a string"
}

// escape says what the string check refused was at: 'u' within a \u
// escape, '\\' just after a backslash, 0 outside an escape.
func escape[T ~string | ~[]byte](b T, f fault) byte {
	for k := f.token + 1; k < f.at; {
		switch {
		case b[k] != '\\':
			k++
		case k+1 == f.at:
			return '\\'
		case b[k+1] == 'u' && f.at <= k+5:
			return 'u'
		case b[k+1] == 'u':
			k += 6
		default:
			k += 2
		}
	}
	return 0
}

// unterminated reports a string that the input's end or a line break
// cut: its opening quote places it better than where it was cut.
func unterminated[T ~string | ~[]byte](b T, f fault) bool {
	return f.token >= 0 && b[f.token] == '"' &&
		(f.err == ErrTruncated || f.err == ErrSyntax && (b[f.at] == '\n' || b[f.at] == '\r'))
}

// expected is what the checker wanted where it refused.
func expected(f fault) string {
	switch {
	case f.state == wantKey:
		return "an object key (a string)"
	case f.state == wantColon:
		return "':' after an object key"
	case f.state == wantValue:
		return "a value"
	case f.depth == 0:
		return "the end of input after the value"
	case f.object:
		return "',' or '}'"
	}
	return "',' or ']'"
}

// previous is the last byte before i that is not white space; 0 when
// there is none.
func previous[T ~string | ~[]byte](b T, i int) byte {
	for i--; i >= 0; i-- {
		if c := b[i]; c != ' ' && c != '\n' && c != '\r' && c != '\t' {
			return c
		}
	}
	return 0
}

// quoted is the character at i, for a message: ']' or 'é'; a control
// character or a byte that begins no UTF-8 character by its value.
func quoted[T ~string | ~[]byte](b T, i int) string {
	c := b[i]
	switch {
	case c >= 0x20 && c < 0x7f:
		return "'" + string(rune(c)) + "'"
	case c < 0x80:
		return "control character 0x" + hex2(c)
	}
	var buf [utf8.UTFMax]byte
	n := copy(buf[:], b[i:min(len(b), i+utf8.UTFMax)])
	if r, size := utf8.DecodeRune(buf[:n]); size > 1 {
		return "'" + string(r) + "'"
	}
	return "byte 0x" + hex2(c)
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&15]})
}
