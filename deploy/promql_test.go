package deploy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// promqlRefs are the metrics a PromQL expression selects: names written
// out (or matched with __name__="x"), and the regexes of __name__=~
// matchers.
type promqlRefs struct {
	names   []string
	nameREs []string
}

// promqlWords are PromQL's keywords and aggregation operators: an
// identifier among them is never a metric name.
var promqlWords = map[string]bool{
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
	"limitk": true, "limit_ratio": true, "inf": true, "nan": true,
}

// promqlLabelLists are the keywords followed by a list of label names.
var promqlLabelLists = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// promqlScan reads the metric references of expr in one pass over its
// bytes (no recursion): an identifier that is no keyword, not followed by
// "(" (a function), not inside {} (a label) nor in the label list of by,
// on and the like, is a metric name. Strings, numbers, durations and
// [range:step] are skipped. Syntax beyond that is promtool's to check.
func promqlScan(expr string) (promqlRefs, error) {
	var refs promqlRefs
	s := expr
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			_, n, err := promqlString(s[i:])
			if err != nil {
				return refs, err
			}
			i += n
		case c == '[':
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return refs, fmt.Errorf("unclosed [ at %d", i)
			}
			i += end + 1
		case c == '{':
			n, err := promqlMatchers(s[i:], &refs)
			if err != nil {
				return refs, err
			}
			i += n
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			for i < len(s) && (isIdentByte(s[i]) || s[i] == '.') {
				i++
			}
		case isIdentStart(c):
			start := i
			for i < len(s) && isIdentByte(s[i]) {
				i++
			}
			word := s[start:i]
			next := nextByte(s, i)
			switch {
			case promqlLabelLists[word] && next == '(':
				end := strings.IndexByte(s[i:], ')')
				if end < 0 {
					return refs, fmt.Errorf("unclosed label list after %q", word)
				}
				i += end + 1
			case promqlWords[strings.ToLower(word)] || next == '(':
			default:
				refs.names = append(refs.names, word)
			}
		default:
			i++ // operators, parentheses, commas, @
		}
	}
	return refs, nil
}

// promqlMatchers reads {label op "value", ...} at the start of s, noting
// the __name__ matchers, and returns its length.
func promqlMatchers(s string, refs *promqlRefs) (int, error) {
	i := 1
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == ',') {
			i++
		}
		if i >= len(s) {
			return 0, fmt.Errorf("unclosed { in %q", s)
		}
		if s[i] == '}' {
			return i + 1, nil
		}
		start := i
		for i < len(s) && isIdentByte(s[i]) {
			i++
		}
		label := s[start:i]
		for i < len(s) && s[i] == ' ' {
			i++
		}
		opStart := i
		for i < len(s) && strings.IndexByte("=!~", s[i]) >= 0 {
			i++
		}
		op := s[opStart:i]
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if label == "" || !slices.Contains([]string{"=", "!=", "=~", "!~"}, op) || i >= len(s) {
			return 0, fmt.Errorf("bad label matcher at %q", s[start:])
		}
		value, n, err := promqlString(s[i:])
		if err != nil {
			return 0, err
		}
		i += n
		if label == "__name__" {
			switch op {
			case "=":
				refs.names = append(refs.names, value)
			case "=~":
				refs.nameREs = append(refs.nameREs, value)
			}
		}
	}
}

// promqlString reads the string literal at the start of s: its value
// (escapes kept as written, which names and the regexes here do not use)
// and its length.
func promqlString(s string) (string, int, error) {
	if s == "" || strings.IndexByte("\"'`", s[0]) < 0 {
		return "", 0, fmt.Errorf("want a string at %q", s)
	}
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch {
		case s[i] == '\\' && q != '`':
			i++
		case s[i] == q:
			return s[1:i], i + 1, nil
		}
	}
	return "", 0, fmt.Errorf("unclosed string %q", s)
}

func nextByte(s string, i int) byte {
	for ; i < len(s); i++ {
		if s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r' {
			return s[i]
		}
	}
	return 0
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':'
}

func isIdentByte(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// The scanner finds the metrics of each form of expression the dashboard
// and the rules use, and nothing else.
func TestPromQLScan(t *testing.T) {
	for _, c := range []struct {
		expr      string
		names, re []string
	}{
		{`ratelimit_redis_healthy == 0`, []string{"ratelimit_redis_healthy"}, nil},
		{`sum by (instance, le) (rate(a_bucket{instance=~"x|y", le!="1"}[5m:30s] offset 1h))`, []string{"a_bucket"}, nil},
		{`histogram_quantile(0.99, sum(rate(b{job="j"}[1m])) by (le)) > bool 1e3`, []string{"b"}, nil},
		{"label_replace({__name__=~\"r_.+_denied\"}, \"rule\", \"$1\", \"__name__\", `r_(.+)`)", nil, []string{"r_.+_denied"}},
		{`x:y:rate5m - z > 0.25 and on (job, rule) w > 1 # a comment naming v`, []string{"x:y:rate5m", "z", "w"}, nil},
		{`topk(5, {__name__="c", a='b\'c'}) or vector(1) unless ignoring(p) group_left(q) d @ start()`, []string{"c", "d"}, nil},
		{`sum without (instance) (e) / count(f) * Inf + NaN`, []string{"e", "f"}, nil},
	} {
		got, err := promqlScan(c.expr)
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		if !slices.Equal(got.names, c.names) || !slices.Equal(got.nameREs, c.re) {
			t.Errorf("%s: names %q, regexes %q; want %q, %q", c.expr, got.names, got.nameREs, c.names, c.re)
		}
	}
	for _, bad := range []string{`a{b="c"`, `a{b~"c"}`, `rate(a[5m)`, `a{b="c}`, `sum by (x`} {
		if _, err := promqlScan(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
