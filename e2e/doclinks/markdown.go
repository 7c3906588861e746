package doclinks

import (
	"regexp"
	"strings"
)

// ref is one link destination written in a file, at its line.
type ref struct {
	line   int
	target string
}

// page is what the check needs of one Markdown file.
type page struct {
	anchors map[string]bool
	links   []ref
	// labels are the reference-style links used ([text][label]) and
	// defined ([label]: target), lowercased.
	used    []ref
	defined map[string]bool
}

var (
	atxHeading = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$`)
	closingATX = regexp.MustCompile(`(?:^|[ \t]+)#+$`)
	refDef     = regexp.MustCompile(`^ {0,3}\[([^\]]+)\]:[ \t]*(\S+)`)
	fullRef    = regexp.MustCompile(`\[([^\[\]]+)\]\[([^\[\]]*)\]`)
	htmlTag    = regexp.MustCompile(`(?i)<(?:a|img)\b[^>]*>`)
	htmlAttr   = regexp.MustCompile(`(?i)\b(src|href|id|name)\s*=\s*(?:"([^"]*)"|'([^']*)')`)
)

// parse reads a Markdown file line by line: fenced code is skipped,
// headings give anchors, and each paragraph is searched for links once
// its code spans are blanked out.
func parse(src string) *page {
	p := &page{anchors: map[string]bool{}, defined: map[string]bool{}}
	slugs := slugger{}
	var para []string
	paraStart := 0
	flush := func() {
		if len(para) > 0 {
			p.scan(strings.Join(para, "\n"), paraStart)
		}
		para = para[:0]
	}
	var fence byte
	fenceLen := 0
	for i, line := range strings.Split(src, "\n") {
		line = strings.TrimSuffix(line, "\r")
		trimmed := strings.TrimLeft(line, " \t")
		if fence != 0 {
			if n := runLen(trimmed, 0, fence); n >= fenceLen && strings.TrimSpace(trimmed[n:]) == "" {
				fence = 0
			}
			continue
		}
		if len(trimmed) > 0 && (trimmed[0] == '`' || trimmed[0] == '~') {
			if n := runLen(trimmed, 0, trimmed[0]); n >= 3 && (trimmed[0] == '~' || !strings.Contains(trimmed[n:], "`")) {
				flush()
				fence, fenceLen = trimmed[0], n
				continue
			}
		}
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		if m := atxHeading.FindStringSubmatch(line); m != nil {
			flush()
			content := closingATX.ReplaceAllString(m[2], "")
			p.anchors[slugs.next(headingText(content))] = true
			p.scan(content, i+1)
			continue
		}
		if len(para) == 0 {
			paraStart = i + 1
		}
		para = append(para, line)
	}
	flush()
	return p
}

// scan records the links, images, anchors and reference labels of text,
// a paragraph or a heading whose first line is line.
func (p *page) scan(text string, line int) {
	text = blankCode(text)
	lineOf := func(off int) int { return line + strings.Count(text[:off], "\n") }
	off := 0
	for _, l := range strings.Split(text, "\n") {
		if m := refDef.FindStringSubmatch(l); m != nil {
			p.defined[strings.ToLower(m[1])] = true
			p.links = append(p.links, ref{line: lineOf(off), target: strings.Trim(m[2], "<>")})
		}
		off += len(l) + 1
	}
	for i := 0; i+1 < len(text); i++ {
		if text[i] != ']' || text[i+1] != '(' || (i > 0 && text[i-1] == '\\') {
			continue
		}
		if dest, end, ok := destination(text, i+2); ok {
			p.links = append(p.links, ref{line: lineOf(i), target: dest})
			i = end - 1
		}
	}
	for _, m := range fullRef.FindAllStringSubmatchIndex(text, -1) {
		label := text[m[4]:m[5]]
		if label == "" {
			label = text[m[2]:m[3]]
		}
		p.used = append(p.used, ref{line: lineOf(m[0]), target: strings.ToLower(label)})
	}
	for _, m := range htmlTag.FindAllStringIndex(text, -1) {
		for _, a := range htmlAttr.FindAllStringSubmatch(text[m[0]:m[1]], -1) {
			v := a[2] + a[3]
			switch strings.ToLower(a[1]) {
			case "id", "name":
				p.anchors[v] = true
			default:
				p.links = append(p.links, ref{line: lineOf(m[0]), target: v})
			}
		}
	}
}

// blankCode replaces every code span of text, and every HTML comment,
// with spaces, keeping line breaks, so that nothing in them is read as a
// link and offsets still give lines.
func blankCode(text string) string {
	b := []byte(text)
	blank := func(from, to int) {
		for k := from; k < to; k++ {
			if b[k] != '\n' {
				b[k] = ' '
			}
		}
	}
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '\\':
			i++
		case b[i] == '`':
			n := runLen(text, i, '`')
			if end := closingRun(text, i+n, n); end >= 0 {
				blank(i, end+n)
				i = end + n - 1
			} else {
				i += n - 1
			}
		case strings.HasPrefix(text[i:], "<!--"):
			end := strings.Index(text[i:], "-->")
			if end < 0 {
				end = len(text) - i - 3
			}
			blank(i, i+end+3)
			i += end + 2
		}
	}
	return string(b)
}

// destination reads an inline link's destination starting at s[i], just
// after "](", and returns it with the index after the closing ")"; ok is
// false when what follows is not a link's (destination, optional title).
func destination(s string, i int) (dest string, end int, ok bool) {
	for i < len(s) && (s[i] == ' ' || s[i] == '\n') {
		i++
	}
	start := i
	if i < len(s) && s[i] == '<' {
		close := strings.IndexAny(s[i:], ">\n")
		if close < 0 || s[i+close] != '>' {
			return "", 0, false
		}
		dest, i = s[i+1:i+close], i+close+1
	} else {
		depth := 0
	loop:
		for ; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '(':
				depth++
			case ')':
				if depth == 0 {
					break loop
				}
				depth--
			case ' ', '\n', '\t':
				break loop
			}
		}
		dest = s[start:min(i, len(s))]
	}
	for i < len(s) && (s[i] == ' ' || s[i] == '\n') {
		i++
	}
	if i < len(s) && (s[i] == '"' || s[i] == '\'' || s[i] == '(') {
		closer := s[i]
		if closer == '(' {
			closer = ')'
		}
		t := strings.IndexByte(s[i+1:], closer)
		if t < 0 {
			return "", 0, false
		}
		i += t + 2
		for i < len(s) && (s[i] == ' ' || s[i] == '\n') {
			i++
		}
	}
	if i >= len(s) || s[i] != ')' {
		return "", 0, false
	}
	return dest, i + 1, true
}
