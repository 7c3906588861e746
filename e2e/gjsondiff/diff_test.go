// Package gjsondiff checks package jsonvalue, the filter's JSON reader,
// against gjson 1.18, the reader it replaced, on the paths and the
// operations the filter uses. It lives outside the filter's module so
// that the module does not need gjson.
package gjsondiff

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
	"github.com/tidwall/gjson"
)

// ours reports whether path is one the filter hands its reader: names
// joined by ".", without gjson's operators, modifiers, static values,
// subselectors or JSON Lines (which jsonvalue reads literally).
func ours(path string) bool {
	if strings.ContainsAny(path, "#*?|@") || strings.HasPrefix(path, "..") ||
		strings.HasPrefix(path, "!") || strings.HasPrefix(path, "[") || strings.HasPrefix(path, "{") {
		return false
	}
	return !strings.Contains(path, ".[") && !strings.Contains(path, ".{")
}

func sameFloat(a, b float64) bool {
	return a == b || math.IsNaN(a) && math.IsNaN(b)
}

// same compares a Value with the gjson Result read from the same text,
// field by field and by every conversion the filter calls.
func same(t *testing.T, what string, v jsonvalue.Value, r gjson.Result) {
	t.Helper()
	switch {
	case int(v.Type) != int(r.Type) || v.Raw != r.Raw || v.Str != r.Str || !sameFloat(v.Num, r.Num) || v.Index != r.Index:
		t.Fatalf("%s: jsonvalue %+v, gjson %+v", what, v, r)
	case v.Exists() != r.Exists() || v.IsObject() != r.IsObject() || v.IsArray() != r.IsArray():
		t.Fatalf("%s: Exists/IsObject/IsArray differ for %+v", what, r)
	case v.String() != r.String() || v.Bool() != r.Bool() || v.Int() != r.Int() || v.Uint() != r.Uint() || !sameFloat(v.Float(), r.Float()):
		t.Fatalf("%s: conversions differ for %+v: String %q/%q Int %d/%d Uint %d/%d Float %v/%v Bool %v/%v", what, r,
			v.String(), r.String(), v.Int(), r.Int(), v.Uint(), r.Uint(), v.Float(), r.Float(), v.Bool(), r.Bool())
	}
}

// sameMembers compares ForEach, Array and Map of a value, one level down.
func sameMembers(t *testing.T, what string, v jsonvalue.Value, r gjson.Result) {
	t.Helper()
	var keys, vals []jsonvalue.Value
	v.ForEach(func(k, e jsonvalue.Value) bool { keys, vals = append(keys, k), append(vals, e); return len(keys) < 64 })
	n := 0
	r.ForEach(func(k, e gjson.Result) bool {
		if n >= len(keys) {
			t.Fatalf("%s: ForEach: gjson has more than %d members", what, len(keys))
		}
		same(t, what+" ForEach key", keys[n], k)
		same(t, what+" ForEach value", vals[n], e)
		n++
		return n < 64
	})
	if n != len(keys) {
		t.Fatalf("%s: ForEach: %d members, gjson %d", what, len(keys), n)
	}
	va, ra := v.Array(), r.Array()
	if len(va) != len(ra) {
		t.Fatalf("%s: Array: %d elements, gjson %d", what, len(va), len(ra))
	}
	for i := range va {
		same(t, what+" Array", va[i], ra[i])
	}
	vm, rm := v.Map(), r.Map()
	if len(vm) != len(rm) || (vm == nil) != (rm == nil) {
		t.Fatalf("%s: Map: %d members, gjson %d", what, len(vm), len(rm))
	}
	for k, e := range rm {
		same(t, what+" Map["+k+"]", vm[k], e)
	}
}

// compare reads doc at path, as given and as escaped names, both ways.
func compare(t *testing.T, doc, path string) {
	t.Helper()
	same(t, "Parse", jsonvalue.Parse(doc), gjson.Parse(doc))
	sameMembers(t, "Parse", jsonvalue.Parse(doc), gjson.Parse(doc))
	compareClaim(t, doc, path)
	if !ours(path) {
		return
	}
	v, r := jsonvalue.Get(doc, path), gjson.Get(doc, path)
	same(t, "Get "+path, v, r)
	sameMembers(t, "Get "+path, v, r)
	same(t, "GetBytes "+path, jsonvalue.GetBytes([]byte(doc), path), gjson.GetBytes([]byte(doc), path))
	if v.Exists() {
		same(t, "Value.Get", v.Get("0"), r.Get("0"))
	}
}

// compareClaim reads doc at path's names escaped, as the filter reads a
// JWT claim: any names but empty ones or with NUL, '#', '*', '?', '|',
// '@' among them (escaped, they are literal).
func compareClaim(t *testing.T, doc, path string) {
	t.Helper()
	names := strings.Split(path, ".")
	if slices.Contains(names, "") || strings.IndexByte(path, 0) >= 0 {
		return
	}
	for i, n := range names {
		if jsonvalue.Escape(n) != gjson.Escape(n) {
			t.Fatalf("Escape(%q): %q, gjson %q", n, jsonvalue.Escape(n), gjson.Escape(n))
		}
		names[i] = gjson.Escape(n)
	}
	escaped := strings.Join(names, ".")
	same(t, "Get escaped "+escaped, jsonvalue.Get(doc, escaped), gjson.Get(doc, escaped))
}

// escapeLikeGjson escapes a name of a path as the filter does (a claim's).
func escapeLikeGjson(n string) string { return gjson.Escape(n) }

var seeds = []struct{ doc, path string }{
	{`{"a":1}`, "a"},
	{`{"usage":{"prompt_tokens":12,"completion_tokens":30}}`, "usage.completion_tokens"},
	{`{"a":{"x":1},"a":{"b":2}}`, "a.b"},
	{`{"a":1,"a":{"b":2}}`, "a.b"},
	{`{"a":[1,{"b":[true,false,null]}]}`, "a.1.b.2"},
	{`[{"a":"x"},{"a":"y"}]`, "1.a"},
	{`{"a\"b":"\u00e9\ud83d\ude00\n"}`, `a"b`},
	{`{"org.id":"acme","org":{"id":"other"}}`, `org.id`},
	{`{"n":9007199254740993,"m":-12345678901234567890,"f":1e400,"g":-0.0,"h":1.5e3}`, "n"},
	{`{"n":"42","b":"TRUE","c":"1"}`, "n"},
	{`{"a" : { "b" : [ 1 , 2 ] } , "c":"d" }  `, "a.b"},
	{`"text {\"a\":1}"`, "a"},
	{`{"a":NaN,"b":Infinity,"c":-Infinity,"d":nan}`, "a"},
	{`{"a":{"b":1}`, "a"},
	{`{"a":"unterminated`, "a"},
	{`{"a":[1,2`, "a.1"},
	{`{"":{"":3}}`, "."},
	{`{"a\\":1,"a":2}`, `a\`},
	{`{"18446744073709551616":1}`, "18446744073709551616"},
	{`[5,6]`, "18446744073709551616"},
	{`{"a":[[1,2],[3,4]]}`, "a.1.0"},
	{`{"a":"x\"y\\"}`, "a"},
	{`{"a":(1,2),"b":3}`, "b"},
	{`{"stream":true,"stream_options":{"include_usage":false},"stream_options":{}}`, "stream_options"},
	{`{"#":1,"a|b":{"@x":[2,{"*":3}]},"*":[4],"?":5,"!":6,"[":7,"{":8}`, "a|b.@x.1.*"},
	{`{"#":1,"a|b":{"@x":[2,{"*":3}]},"*":[4],"?":5,"!":6,"[":7,"{":8}`, "*.0"},
	{`{"@this":{"#":[{"a":1}]},"x":[{"#":2}]}`, "@this.#.0.a"},
	{`{"@this":{"#":[{"a":1}]},"x":[{"#":2}]}`, "x.#.#"},
	{`{"https://example.com/roles":["admin"],"a":{"b*":1}}`, "https://example"},
	{`{"a":"x\`, "a"},
	{`{"a\`, "a"},
	{`{"\u12":1,"\uZZZZ":2,"\u00e9\ud800":3,"\udc00\ud800\u0041":4}`, "\x00"},
	{`{"a":"\ud83d\ude0","b":"\ud83d\u","c":"\ud83d\uDE00x","d":"\u+123\u_123"}`, "c"},
	{`{"a":1e999999999999,"b":-1e-999999,"c":123456789012345678901234567890123456789,"d":0x10,"e":+1,"f":.5}`, "c"},
	{`{"a":` + strings.Repeat(`{"a":`, 300) + `1` + strings.Repeat(`}`, 300) + `}`, strings.Repeat("a.", 300) + "a"},
	{`{"a":"` + strings.Repeat(`\\`, 40) + `\"x","b":"` + strings.Repeat("y", 70) + `\\","c":1}`, "c"},
	{strings.Repeat(`[`, 100) + `"` + strings.Repeat(`\"`, 50), "0.0.0"},
}

func TestAgainstGjson(t *testing.T) {
	for _, s := range seeds {
		compare(t, s.doc, s.path)
	}
}

// FuzzAgainstGjson compares the two readers on any bytes: valid JSON as
// jsonbound lets it through, and anything else.
func FuzzAgainstGjson(f *testing.F) {
	for _, s := range seeds {
		f.Add(s.doc, s.path)
	}
	f.Fuzz(func(t *testing.T, doc, path string) {
		compare(t, doc, path)
		_ = jsonbound.ValidString(doc)
	})
}
