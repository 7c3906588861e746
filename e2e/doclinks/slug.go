package doclinks

import (
	"strconv"
	"strings"
	"unicode"
)

// Slug is the anchor GitHub gives a heading whose rendered text is text:
// trimmed and lowercased, every character but letters, digits, marks,
// spaces, hyphens and underscores removed, each space made a hyphen.
func Slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(text)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// slugger hands out the anchors of one file's headings in order: a slug
// already taken gets -1, -2, ... as GitHub does.
type slugger map[string]int

func (s slugger) next(text string) string {
	base := Slug(text)
	id := base
	for {
		if _, taken := s[id]; !taken {
			break
		}
		s[base]++
		id = base + "-" + strconv.Itoa(s[base])
	}
	s[id] = 0
	return id
}

// headingText is the text GitHub renders for an ATX heading's content:
// code spans keep their content, a link or image keeps its text, HTML
// tags, backslashes before punctuation and emphasis underscores go.
func headingText(raw string) string {
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '\\' && i+1 < len(raw) && isPunct(raw[i+1]):
			i++
			b.WriteByte(raw[i])
		case c == '`':
			n := runLen(raw, i, '`')
			end := closingRun(raw, i+n, n)
			if end < 0 {
				b.WriteString(raw[i : i+n])
				i += n - 1
				continue
			}
			code := raw[i+n : end]
			if len(code) > 1 && code[0] == ' ' && code[len(code)-1] == ' ' {
				code = code[1 : len(code)-1]
			}
			b.WriteString(code)
			i = end + n - 1
		case c == '<' && i+1 < len(raw) && (isLetter(raw[i+1]) || raw[i+1] == '/'):
			if end := strings.IndexByte(raw[i:], '>'); end > 0 {
				i += end
			}
		case c == ']' && i+1 < len(raw) && raw[i+1] == '(':
			if _, end, ok := destination(raw, i+2); ok {
				i = end - 1
			}
		case c == '[' || (c == '!' && i+1 < len(raw) && raw[i+1] == '['):
			// a link's or image's opening bracket renders as nothing
			if c == '!' {
				i++
			}
		case c == '_' && (i == 0 || !isWord(raw[i-1]) || i+1 == len(raw) || !isWord(raw[i+1])):
			// an emphasis delimiter; one between word characters stays
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func isWord(c byte) bool { return isLetter(c) || c >= '0' && c <= '9' || c >= 0x80 }

func isPunct(c byte) bool {
	return c > ' ' && c < 0x7f && !isLetter(c) && (c < '0' || c > '9')
}

// runLen is the length of the run of c starting at s[i].
func runLen(s string, i int, c byte) int {
	n := 0
	for i+n < len(s) && s[i+n] == c {
		n++
	}
	return n
}

// closingRun is the index of the next run of exactly n backticks at or
// after from, or -1.
func closingRun(s string, from, n int) int {
	for i := from; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		m := runLen(s, i, '`')
		if m == n {
			return i
		}
		i += m
	}
	return -1
}
