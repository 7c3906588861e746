package jsonvalue

import (
	"strings"
	"testing"
)

// FuzzRead reads any bytes by any path: no call panics, and every value
// found is a piece of the text at its Index.
func FuzzRead(f *testing.F) {
	for _, s := range [][2]string{
		{`{"a":{"b":[1,"x",null,true]}}`, "a.b.1"},
		{`{"a":1,"a":{"b":2}}`, "a.b"},
		{`{"a\u0041":"\ud83d"}`, `aA`},
		{`[[[`, "0.0"},
		{`{"a":"\`, "a"},
		{`{"a":(]}`, "a"},
		{`{"\"":nan}`, `"`},
		{`  [1, -2e5 ,"s"] `, `2`},
		{`{"a\`, `a\`},
		{`{"\uZZ12":1,"\ud800\u12":"\udc00\ud800x"}`, "\x00"},
		{`{"a":1e999999,"b":123456789012345678901234567890}`, "b"},
		{`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`, "0.0.0.0.0"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, doc, path string) {
		for _, v := range []Value{Get(doc, path), Parse(doc), GetBytes([]byte(doc), path)} {
			if v.Raw != "" && (v.Index < 0 || v.Index > len(doc) || !strings.HasPrefix(doc[v.Index:], v.Raw)) {
				t.Fatalf("%+v is not at its Index in %q", v, doc)
			}
			_, _, _, _, _ = v.String(), v.Int(), v.Uint(), v.Float(), v.Bool()
			v.ForEach(func(k, e Value) bool {
				if e.Raw != "" && !strings.Contains(doc, e.Raw) {
					t.Fatalf("ForEach: %q is not in %q", e.Raw, doc)
				}
				return true
			})
			_, _ = v.Array(), v.Map()
			_ = v.Get(path)
		}
	})
}

// FuzzKeyIs checks that Get's comparison of an escaped key with a name,
// which unescapes only as far as the name, says what unescape says.
func FuzzKeyIs(f *testing.F) {
	f.Add(`\u0061b`, "ab")
	f.Add(`\ud83d\ude00`, "\U0001F600")
	f.Add(`x\"y`, `x"y`)
	f.Add(`\uZZZZ`, "\x00")
	f.Add(`ab\`, "ab")
	f.Fuzz(func(t *testing.T, raw, name string) {
		if got, want := keyIs(raw, true, name), unescape(raw) == name; got != want {
			t.Fatalf("keyIs(%q, %q) = %v, unescape gives %q", raw, name, got, unescape(raw))
		}
		if keyIs(raw, false, name) != (raw == name) {
			t.Fatalf("keyIs(%q, %q) unescaped", raw, name)
		}
	})
}
