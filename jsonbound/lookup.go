package jsonbound

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Lookup reads the field at a dotted path (such as metadata.team, or
// messages.0.role: a number names an array's element) of a body ReadBody
// returned, as an upstream's parser reads it: in each object on the way it
// scans every member, compares keys unescaped ("mod\u0065l" is model),
// and takes the last match. It returns the field's JSON text, "" when the
// path leads nowhere, or why the path is refused (RefuseCaseVariant,
// RefuseDuplicateParent). Its work is linear in the body's size, without
// recursion.
func Lookup(body, path string) (string, Refusal) {
	start, end, why := LookupAt(body, path)
	if start < 0 {
		return "", why
	}
	return body[start:end], 0
}

// LookupAt is Lookup's field as its place in body, body[start:end];
// start is -1 when the path leads nowhere or is refused.
func LookupAt(body, path string) (start, end int, why Refusal) {
	i := skipSpace(body, 0)
	for i < len(body) {
		name, rest, more := strings.Cut(path, ".")
		switch body[i] {
		case '{':
			if i, why = member(body, i, name, more); why != 0 || i < 0 {
				return -1, -1, why
			}
		case '[':
			if i = element(body, i, name); i < 0 {
				return -1, -1, 0
			}
		default:
			return -1, -1, 0
		}
		if !more {
			return i, skipValue(body, i), 0
		}
		path = rest
	}
	return -1, -1, 0
}

// member is where the value of the object at i's last member named name
// begins, or -1; parent says the path goes on inside it.
func member(body string, i int, name string, parent bool) (int, Refusal) {
	at, seen := -1, 0
	i = skipSpace(body, i+1)
	for i < len(body) && body[i] == '"' {
		end := stringEnd(body, i)
		exact, folded := keyIs(body[i+1:end-1], name)
		if folded && !exact {
			return -1, RefuseCaseVariant
		}
		i = skipSpace(body, skipSpace(body, end)+1) // past ':'
		if exact {
			at, seen = i, seen+1
		}
		if i = skipSpace(body, skipValue(body, i)); i < len(body) && body[i] == ',' {
			i = skipSpace(body, i+1)
		}
	}
	if parent && seen > 1 {
		return -1, RefuseDuplicateParent
	}
	return at, 0
}

// element is where the element numbered index (decimal, without leading
// zeros) of the array at i begins, or -1.
func element(body string, i int, index string) int {
	n := 0
	for k := 0; k < len(index); k++ {
		c := index[k]
		if c < '0' || c > '9' || k > 0 && n == 0 || n > 1<<24 {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	if index == "" {
		return -1
	}
	for i = skipSpace(body, i+1); i < len(body) && body[i] != ']'; n-- {
		if n == 0 {
			return i
		}
		if i = skipSpace(body, skipValue(body, i)); i < len(body) && body[i] == ',' {
			i = skipSpace(body, i+1)
		}
	}
	return -1
}

// keyIs compares a raw key (its text between the quotes) with name: equal
// once unescaped, or equal under Unicode case folding (as strings.EqualFold
// and encoding/json's match of a struct's fields). It decodes the key as
// it compares, allocating nothing.
func keyIs(raw, name string) (exact, folded bool) {
	exact, folded = true, true
	i, j := 0, 0
	for i < len(raw) && j < len(name) && (exact || folded) {
		if a, b := raw[i], name[j]; a < utf8.RuneSelf && a != '\\' && b < utf8.RuneSelf {
			if i, j = i+1, j+1; a != b { // ASCII folds only a letter's case
				l := a | 0x20
				exact, folded = false, folded && l == b|0x20 && l >= 'a' && l <= 'z'
			}
			continue
		}
		r, n := keyRune(raw, i)
		c, m := utf8.DecodeRuneInString(name[j:])
		if i, j = i+n, j+m; r != c {
			exact, folded = false, folded && sameFold(r, c)
		}
	}
	if i < len(raw) || j < len(name) {
		return false, false
	}
	return exact, folded
}

// keyRune decodes the character of a valid string's text at i, escaped or
// not, and its length there.
func keyRune(raw string, i int) (rune, int) {
	switch c := raw[i]; {
	case c >= utf8.RuneSelf:
		return utf8.DecodeRuneInString(raw[i:])
	case c != '\\':
		return rune(c), 1
	}
	switch c := raw[i+1]; c {
	case 'u':
		r, _, _ := hex4(raw, i+2)
		if r >= 0xD800 && r <= 0xDBFF { // a high surrogate, its low one next
			lo, _, _ := hex4(raw, i+8)
			return (r-0xD800)<<10 | (lo - 0xDC00) + 0x10000, 12
		}
		return r, 6
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	default: // " \ /
		return rune(c), 2
	}
}

// sameFold reports whether r and c are one character under simple case
// folding.
func sameFold(r, c rune) bool {
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f == c {
			return true
		}
	}
	return false
}

// stringEnd is the offset just past the valid string that opens at i.
func stringEnd(b string, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '"':
			return i + 1
		case '\\':
			i++
		}
	}
	return len(b)
}

// skipValue is the offset just past the valid value at i.
func skipValue(b string, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\n' && b[i] != '\r' && b[i] != '\t' {
		i++
	}
	return i
}
