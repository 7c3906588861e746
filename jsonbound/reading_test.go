package jsonbound

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// reading is what one parser reads at a path of a body: accepted false
// when it refuses the body; kind one of str, num, bool, null, obj, arr or
// absent; text a string's value, or a number's or boolean's text.
type reading struct {
	accepted   bool
	kind, text string
}

// filterReading is ReadBody then Lookup; why is non-zero for a refusal.
func filterReading(body []byte, path string) (reading, Refusal) {
	rest, why := ReadBody(body)
	if why != 0 {
		return reading{}, why
	}
	raw, why := Lookup(string(rest), path)
	if why != 0 {
		return reading{}, why
	}
	r := reading{accepted: true, kind: "absent"}
	switch {
	case raw == "":
	case raw[0] == '"':
		r.kind = "str"
		if err := json.Unmarshal([]byte(raw), &r.text); err != nil {
			panic("a string Lookup returned does not decode: " + raw)
		}
	case raw[0] == 't' || raw[0] == 'f':
		r.kind, r.text = "bool", raw
	case raw[0] == 'n':
		r.kind = "null"
	case raw[0] == '{':
		r.kind = "obj"
	case raw[0] == '[':
		r.kind = "arr"
	default:
		r.kind, r.text = "num", raw
	}
	return r, 0
}

// goReading is encoding/json's reading, into map[string]any.
func goReading(body []byte, path string) reading {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return reading{}
	}
	for name := range strings.SplitSeq(path, ".") {
		switch c := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = c[name]; !ok {
				return reading{accepted: true, kind: "absent"}
			}
		case []any:
			n, err := strconv.Atoi(name)
			if err != nil || n < 0 || n >= len(c) || name != strconv.Itoa(n) {
				return reading{accepted: true, kind: "absent"}
			}
			v = c[n]
		default:
			return reading{accepted: true, kind: "absent"}
		}
	}
	switch x := v.(type) {
	case string:
		return reading{true, "str", x}
	case float64:
		return reading{true, "num", strconv.FormatFloat(x, 'g', -1, 64)}
	case bool:
		return reading{true, "bool", strconv.FormatBool(x)}
	case nil:
		return reading{true, "null", ""}
	case map[string]any:
		return reading{true, "obj", ""}
	}
	return reading{true, "arr", ""}
}

// agrees checks that a parser's reading of an accepted body is the
// filter's: the same kind; a string's or boolean's text; a number's value
// where both are finite floats (Python's int and float texts differ from
// what was written: 1.0 and 1e0 are one number, written differently).
func agrees(filter, other reading) bool {
	if !other.accepted {
		return true
	}
	if filter.kind != other.kind {
		return false
	}
	switch filter.kind {
	case "str", "bool":
		return filter.text == other.text
	case "num":
		a, errA := strconv.ParseFloat(filter.text, 64)
		b, errB := strconv.ParseFloat(other.text, 64)
		return errA != nil || errB != nil || a == b || a != a && b != b
	}
	return true
}

// FuzzReadBody checks the reader against encoding/json: a body Go reads
// is refused only for a documented reason the reader has and Go lacks
// (depth, UTF-8, surrogates); when both read it, the path reads the same.
func FuzzReadBody(f *testing.F) {
	for _, s := range [][2]string{
		{`{"model":"a","model":"b"}`, "model"},
		{`{"mod\u0065l":"a"}`, "model"},
		{`{"metadata":{"team":"a"},"metadata":{"x":1}}`, "metadata.team"},
		{`{"model":"a","MODEL":"b"}`, "model"},
		{"\xef\xbb\xbf{\"model\":\"a\"}", "model"},
		{`{"n":NaN,"model":"a"}`, "model"},
		{`{"a":[{"b":1},{"b":"x"}]}`, "a.1.b"},
		{`{"s":"\ud83d\ude00","t":"\ud800"}`, "s"},
		{"{\"\\u212a\":1}", "k"},
	} {
		f.Add([]byte(s[0]), s[1])
	}
	f.Fuzz(func(t *testing.T, body []byte, path string) {
		got, why := filterReading(body, path)
		want := goReading(body, path)
		switch {
		case why == RefuseSyntax || why == RefuseEncoding:
			if want.accepted && depthOf(string(body)) <= MaxDepth {
				t.Fatalf("%q: refused (%v); encoding/json reads it", body, why)
			}
		case why == 0 && !agrees(got, want):
			t.Fatalf("%q at %q: read %+v; encoding/json reads %+v", body, path, got, want)
		}
	})
}

// FuzzKeyIs compares keyIs, on a key as encoding/json escapes it, with
// == and strings.EqualFold on the key itself.
func FuzzKeyIs(f *testing.F) {
	for _, s := range [][2]string{{"model", "model"}, {"MODEL", "model"}, {"\u212a", "k"}, {"ſ", "S"}, {"é<>&\n", "É<>&\n"}, {"😀", "😀x"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, key, name string) {
		if !utf8.ValidString(key) || !utf8.ValidString(name) {
			return
		}
		quoted, _ := json.Marshal(key)
		exact, folded := keyIs(string(quoted[1:len(quoted)-1]), name)
		if exact != (key == name) || folded != strings.EqualFold(key, name) {
			t.Fatalf("keyIs(%s, %q) = %t, %t", quoted, name, exact, folded)
		}
	})
}
