package redisproto

import (
	"bytes"
	"errors"
	"math"
	"strconv"
)

// parser reads the tokens of one reply. Every method returns ErrIncomplete
// only when the bytes seen so far can still begin a valid reply, and a
// malformed error as soon as they cannot.
type parser struct {
	b     []byte
	lim   Limits
	total int // lower bound on the values in the reply, kept <= lim.MaxElements
}

// next reads the value or aggregate header at pos into v, which is zero.
// An aggregate there would sit at nesting depth. For an aggregate header
// next returns the number of values that follow (twice the pairs of a map
// or attribute); for a complete value it returns -1.
func (p *parser) next(v *Value, pos, depth int) (k, next int, err error) {
	b := p.b
	if pos >= len(b) {
		return 0, 0, ErrIncomplete
	}
	c := b[pos]
	pos++
	switch c {
	case '+', '-', '(', ',':
		return p.lineValue(v, c, pos)
	case ':':
		v.Kind = KindInteger
		v.Int, next, err = p.integer(pos)
	case '#':
		v.Kind = KindBool
		if pos < len(b) && b[pos] != 't' && b[pos] != 'f' {
			return 0, 0, malformed(pos, "bad boolean %q", b[pos])
		}
		if pos < len(b) && b[pos] == 't' {
			v.Int = 1
		}
		next, err = p.crlf(pos + 1)
	case '_':
		v.Kind = KindNull
		next, err = p.crlf(pos)
	case '$', '!', '=':
		return p.blob(v, c, pos)
	case '*', '%', '~', '>', '|':
		return p.aggregate(v, c, pos, depth)
	default:
		return 0, 0, malformed(pos-1, "bad type byte %q", c)
	}
	return -1, next, err
}

// lineValue reads a simple string, error, big number or double whose type
// byte c preceded pos.
func (p *parser) lineValue(v *Value, c byte, pos int) (k, next int, err error) {
	switch c {
	case '+':
		v.Kind = KindSimpleString
	case '-':
		v.Kind = KindError
	case '(':
		v.Kind = KindBigNumber
	case ',':
		v.Kind = KindDouble
	}
	text, cr, err := p.line(pos)
	if err != nil {
		return 0, 0, err
	}
	need := 0 // bytes the text lacks at least; < 0 if it cannot be completed
	switch c {
	case '(':
		need = scanBigNumber(text)
	case ',':
		need = scanDouble(text)
	}
	switch {
	case need < 0 || cr && need > 0:
		return 0, 0, malformed(pos, "bad %s", v.Kind)
	case !cr && len(text)+need > p.lim.MaxBulkLen:
		return 0, 0, malformed(pos, "line exceeds MaxBulkLen (%d)", p.lim.MaxBulkLen)
	case !cr:
		return 0, 0, ErrIncomplete
	}
	if next, err = p.crlf(pos + len(text)); err != nil {
		return 0, 0, err
	}
	if c == ',' {
		v.Float = parseDouble(text)
	} else {
		v.Str = text
	}
	return -1, next, nil
}

// blob reads a length-prefixed value whose type byte c preceded pos.
func (p *parser) blob(v *Value, c byte, pos int) (k, next int, err error) {
	n, body, err := p.length(pos, p.lim.MaxBulkLen, c == '$')
	if err == errLimit {
		return 0, 0, malformed(pos, "length exceeds MaxBulkLen (%d)", p.lim.MaxBulkLen)
	}
	if err != nil {
		return 0, 0, err
	}
	pos = body
	if n < 0 {
		v.Kind = KindNull
		return -1, pos, nil
	}
	b := p.b
	switch c {
	case '$':
		v.Kind = KindBulkString
	case '!':
		v.Kind = KindBlobError
	case '=':
		v.Kind = KindVerbatim
		if n < 4 {
			return 0, 0, malformed(pos, "verbatim string of length %d lacks a format", n)
		}
		if len(b)-pos > 3 && b[pos+3] != ':' {
			return 0, 0, malformed(pos+3, "verbatim format not followed by ':'")
		}
	}
	if n > len(b)-pos {
		return 0, 0, ErrIncomplete
	}
	end := pos + n
	if next, err = p.crlf(end); err != nil {
		return 0, 0, err
	}
	v.Str = b[pos:end:end]
	if c == '=' {
		copy(v.Format[:], b[pos:pos+3])
		v.Str = v.Str[4:]
	}
	return -1, next, nil
}

// aggregate reads the header of an aggregate whose type byte c preceded pos.
func (p *parser) aggregate(v *Value, c byte, pos, depth int) (k, next int, err error) {
	// Only the null array, "*-1", opens no level.
	if depth > p.lim.MaxDepth && (c != '*' || pos < len(p.b) && p.b[pos] != '-') {
		return 0, 0, malformed(pos-1, "nesting exceeds MaxDepth (%d)", p.lim.MaxDepth)
	}
	// Each declared element is at least one more value in the reply.
	budget := p.lim.MaxElements - p.total
	pairs := c == '%' || c == '|'
	if pairs {
		budget /= 2
	}
	n, next, err := p.length(pos, budget, c == '*')
	if err == errLimit {
		return 0, 0, malformed(pos, "aggregate exceeds MaxElements (%d)", p.lim.MaxElements)
	}
	if err != nil {
		return 0, 0, err
	}
	if n < 0 {
		v.Kind = KindNull
		return -1, next, nil
	}
	if pairs {
		n *= 2
	}
	p.total += n
	switch c {
	case '*':
		v.Kind = KindArray
	case '%':
		v.Kind = KindMap
	case '~':
		v.Kind = KindSet
	case '>':
		v.Kind = KindPush
	case '|':
		v.Kind = kindAttr
	}
	return n, next, nil
}

// errLimit is length's signal that a length exceeds its max; callers
// replace it with a malformed error naming the limit.
var errLimit = errors.New("redisproto: limit exceeded")

// length reads a length at pos: digits without a leading zero, at most
// max, and with nullOK also the null length -1. The line ends in CRLF.
func (p *parser) length(pos, max int, nullOK bool) (n, next int, err error) {
	b := p.b
	if pos < len(b) {
		switch b[pos] {
		case '-':
			if !nullOK {
				return 0, 0, malformed(pos, "negative length")
			}
			if pos+1 < len(b) && b[pos+1] != '1' {
				return 0, 0, malformed(pos, "negative length other than -1")
			}
			next, err = p.crlf(pos + 2)
			return -1, next, err
		case '?':
			return 0, 0, malformed(pos, "streamed values are not supported")
		}
	}
	i := pos
	for ; i < len(b) && isDigit(b[i]); i++ {
		if i > pos && n == 0 {
			return 0, 0, malformed(i, "leading zero in length")
		}
		d := int(b[i] - '0')
		if n > max/10 || n*10 > max-d {
			return 0, 0, errLimit
		}
		n = n*10 + d
	}
	if i == pos && i < len(b) {
		return 0, 0, malformed(i, "bad length byte %q", b[i])
	}
	next, err = p.crlf(i)
	return n, next, err
}

// integer reads a signed 64-bit integer at pos, ending in CRLF. Like
// Redis's string2ll it rejects '+', leading zeros and "-0".
func (p *parser) integer(pos int) (int64, int, error) {
	b := p.b
	i := pos
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	limit := uint64(math.MaxInt64)
	if neg {
		limit++
	}
	start := i
	var u uint64
	for ; i < len(b) && isDigit(b[i]); i++ {
		if i > start && u == 0 {
			return 0, 0, malformed(i, "leading zero in integer")
		}
		if neg && u == 0 && b[i] == '0' {
			return 0, 0, malformed(i, "negative zero")
		}
		d := uint64(b[i] - '0')
		if i-start >= 18 && u > (limit-d)/10 { // 18 digits cannot overflow
			return 0, 0, malformed(pos, "integer overflows int64")
		}
		u = u*10 + d
	}
	if i == start && i < len(b) {
		return 0, 0, malformed(i, "bad integer byte %q", b[i])
	}
	next, err := p.crlf(i)
	if neg {
		return -int64(u), next, err // u = 1<<63 gives math.MinInt64
	}
	return int64(u), next, err
}

// crlf checks for CRLF at pos and returns the position after it.
func (p *parser) crlf(pos int) (int, error) {
	b := p.b
	switch {
	case pos >= len(b):
		return 0, ErrIncomplete
	case b[pos] != '\r':
		return 0, malformed(pos, "expected CRLF, found %q", b[pos])
	case pos+1 >= len(b):
		return 0, ErrIncomplete
	case b[pos+1] != '\n':
		return 0, malformed(pos+1, "CR not followed by LF")
	}
	return pos + 2, nil
}

// line returns the text at pos up to the next CR, or up to the end of the
// input if there is no CR yet, and whether there was one. The text may not
// contain LF or be longer than MaxBulkLen.
func (p *parser) line(pos int) (text []byte, cr bool, err error) {
	text = p.b[pos:]
	if max := p.lim.MaxBulkLen; len(text) > max {
		text = text[:max+1] // room for max bytes of text and the CR
	}
	if i := bytes.IndexByte(text, '\r'); i >= 0 {
		text, cr = text[:i:i], true
	}
	if lf := bytes.IndexByte(text, '\n'); lf >= 0 {
		return nil, false, malformed(pos+lf, "line feed inside a line")
	}
	if len(text) > p.lim.MaxBulkLen {
		return nil, false, malformed(pos, "line exceeds MaxBulkLen (%d)", p.lim.MaxBulkLen)
	}
	return text, cr, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanBigNumber checks s against the big number syntax, "-"? digit+. It
// returns how many bytes s lacks at least to match (0 if it matches), or
// -1 if no extension of s matches.
func scanBigNumber(s []byte) int {
	i := 0
	if len(s) > 0 && s[0] == '-' {
		i++
	}
	for _, c := range s[i:] {
		if !isDigit(c) {
			return -1
		}
	}
	if len(s) > i {
		return 0
	}
	return 1
}

// States of scanDouble; the accepting ones are marked.
const (
	dStart     = iota
	dSign      // after '-'
	dInt       // integer digits (accepting)
	dDot       // after '.'
	dFrac      // fraction digits (accepting)
	dExp       // after 'e' or 'E'
	dExpSign   // after the exponent's sign
	dExpDigits // exponent digits (accepting)
)

var doubleWords = [...]string{"inf", "-inf", "nan"}

// scanDouble checks s against the RESP3 double syntax: "inf", "-inf",
// "nan" or "-"? digit+ ("." digit+)? ([eE] [+-]? digit+)?. It returns how
// many bytes s lacks at least to match (0 if it matches), or -1 if no
// extension of s matches.
func scanDouble(s []byte) int {
	need := -1
	for _, w := range doubleWords {
		if len(s) <= len(w) && string(s) == w[:len(s)] {
			need = len(w) - len(s)
		}
	}
	state := dStart
	for _, c := range s {
		switch {
		case isDigit(c):
			switch state {
			case dStart, dSign:
				state = dInt
			case dDot:
				state = dFrac
			case dExp, dExpSign:
				state = dExpDigits
			}
		case c == '-' && state == dStart:
			state = dSign
		case c == '.' && state == dInt:
			state = dDot
		case (c == 'e' || c == 'E') && (state == dInt || state == dFrac):
			state = dExp
		case (c == '+' || c == '-') && state == dExp:
			state = dExpSign
		default:
			return need // a word, or nothing
		}
	}
	if state == dInt || state == dFrac || state == dExpDigits {
		return 0
	}
	return 1 // every other state takes one more digit
}

// parseDouble returns the value of s, which scanDouble accepts. A number
// out of range rounds to ±Inf or zero; Redis never sends one.
func parseDouble(s []byte) float64 {
	switch string(s) {
	case "inf":
		return math.Inf(1)
	case "-inf":
		return math.Inf(-1)
	case "nan":
		return math.NaN()
	}
	f, _ := strconv.ParseFloat(string(s), 64) // only ErrRange is possible
	return f
}
