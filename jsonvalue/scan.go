package jsonvalue

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The scanners read one token from s[i] on, as gjson did: leniently, each
// byte once, and stopping at the end of s.

// stringEnd returns the end of the string whose '"' is s[i]: just past its
// closing quote, with esc set when it holds a '\'; ok is false when s ends
// first. A long string is searched for its quotes with IndexByte.
func stringEnd(s string, i int) (end int, esc, ok bool) {
	for i++; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return i + 1, esc, true
		case c == '\\':
			esc = true
			i++
		case i&31 == 31:
			return quoteEnd(s, i+1, esc)
		}
	}
	return len(s), esc, false
}

// quoteEnd is stringEnd from s[j] on, inside a string, esc set when a '\'
// came before j.
func quoteEnd(s string, j int, esc bool) (end int, _, ok bool) {
	start := j
	for {
		q := strings.IndexByte(s[j:], '"')
		if q < 0 {
			return len(s), esc || strings.IndexByte(s[start:], '\\') >= 0, false
		}
		j += q
		n := 0 // the backslashes before the quote
		for n < j-start && s[j-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return j + 1, esc || n > 0 || strings.IndexByte(s[start:j], '\\') >= 0, true
		}
		j++
	}
}

// nesting marks the bytes containerEnd stops at: 1 opens, 2 closes, 3 is
// a string's quote.
var nesting = [256]uint8{'{': 1, '[': 1, '(': 1, '}': 2, ']': 2, ')': 2, '"': 3}

// containerEnd returns the end of the object or array whose opening byte
// is s[i]: just past the byte that closes it, counting every '{', '[',
// '(' as an opening and '}', ']', ')' as a closing outside strings, or
// len(s).
func containerEnd(s string, i int) int {
	depth := 0
	for ; i < len(s); i++ {
		for i < len(s) && nesting[s[i]] == 0 {
			i++
		}
		if i == len(s) {
			break
		}
		switch nesting[s[i]] {
		case 3:
			end, _, _ := stringEnd(s, i)
			i = end - 1
		case 1:
			depth++
		case 2:
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return len(s)
}

// numberEnd returns the end of the number starting at s[i]: the next
// space, control byte, ',', ']' or '}', or len(s).
func numberEnd(s string, i int) int {
	for i++; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == ',' || c == ']' || c == '}' {
			return i
		}
	}
	return len(s)
}

// wordEnd returns the end of the literal starting at s[i]: the next byte
// that is not a lower-case letter, or len(s).
func wordEnd(s string, i int) int {
	for i++; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return i
		}
	}
	return len(s)
}

// startsNumber reports whether c begins a number (NaN and Infinity too).
func startsNumber(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == 'i' || c == 'I' || c == 'N'
}

// number is the Number whose text is raw.
func number(raw string) Value {
	f, _ := strconv.ParseFloat(raw, 64) // ±Inf beyond range, 0 when not a number
	return Value{Type: Number, Raw: raw, Num: f}
}

// word is the literal raw: true, false, or else a Null that exists.
func word(raw string) Value {
	switch raw[0] {
	case 't':
		return Value{Type: True, Raw: raw}
	case 'f':
		return Value{Type: False, Raw: raw}
	}
	return Value{Type: Null, Raw: raw}
}

// text is the String whose text, opening quote included, is raw, and its
// closing quote too when closed is set.
func text(raw string, esc, closed bool) Value {
	inner := raw[1:]
	if closed {
		inner = raw[1 : len(raw)-1]
	}
	if esc {
		return Value{Type: String, Raw: raw, Str: unescape(inner)}
	}
	return Value{Type: String, Raw: raw, Str: inner}
}

// token reads the value starting at s[i], as a path's walk and ForEach
// meet it; ok is false when s[i] begins no value or the value is a string
// that s ends in.
func token(s string, i int) (v Value, end int, ok bool) {
	switch c := s[i]; {
	case c == '"':
		end, esc, ok := stringEnd(s, i)
		if !ok {
			return Value{}, end, false
		}
		return text(s[i:end], esc, true), end, true
	case c == '{' || c == '[':
		end = containerEnd(s, i)
		return Value{Type: JSON, Raw: s[i:end]}, end, true
	case c == 'n' && i+1 < len(s) && s[i+1] != 'u': // nan
		end = numberEnd(s, i)
		return number(s[i:end]), end, true
	case c == 'n' || c == 't' || c == 'f':
		end = wordEnd(s, i)
		return word(s[i:end]), end, true
	case startsNumber(c):
		end = numberEnd(s, i)
		return number(s[i:end]), end, true
	}
	return Value{}, i, false
}

// valueEnd is token's end, without reading the value.
func valueEnd(s string, i int) (end int, ok bool) {
	switch c := s[i]; {
	case c == '"':
		end, _, ok = stringEnd(s, i)
		return end, ok
	case c == '{' || c == '[':
		return containerEnd(s, i), true
	case c == 'n' && i+1 < len(s) && s[i+1] != 'u': // nan
		return numberEnd(s, i), true
	case c == 'n' || c == 't' || c == 'f':
		return wordEnd(s, i), true
	case startsNumber(c):
		return numberEnd(s, i), true
	}
	return i, false
}

// unescape is the text of a string's inside: the escapes decoded, and cut
// short at a control byte or a broken escape; a lone surrogate becomes
// U+FFFD. It is never longer than s.
func unescape(s string) string { return string(appendUnescaped(make([]byte, 0, len(s)), s, len(s))) }

// appendUnescaped appends unescape's text of s to out, stopping once out
// is longer than max.
func appendUnescaped(out []byte, s string, max int) []byte {
	for i := 0; i < len(s) && len(out) <= max; i++ {
		c := s[i]
		switch {
		case c < ' ':
			return out
		case c != '\\':
			out = append(out, c)
			continue
		}
		if i++; i >= len(s) {
			return out
		}
		switch s[i] {
		case '"', '\\', '/':
			out = append(out, s[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if i+5 > len(s) {
				return out
			}
			r := hex4(s[i+1 : i+5])
			i += 4
			if utf16.IsSurrogate(r) && len(s)-i >= 7 && s[i+1] == '\\' && s[i+2] == 'u' {
				r = utf16.DecodeRune(r, hex4(s[i+3:i+7]))
				i += 6
			}
			out = utf8.AppendRune(out, r)
		default:
			return out
		}
	}
	return out
}

// hex4 reads four hex digits; anything else reads as 0, as gjson read it.
func hex4(s string) rune {
	var r rune
	for i := 0; i < 4; i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0
		}
	}
	return r
}
