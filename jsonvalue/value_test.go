package jsonvalue

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestGet(t *testing.T) {
	for _, c := range []struct {
		doc, path string
		typ       Type
		raw, str  string
		index     int
	}{
		{`{"a":1}`, "a", Number, "1", "", 5},
		{`{"a":{"b":"x"}}`, "a.b", String, `"x"`, "x", 10},
		{`{"a":{"x":1},"a":{"b":2}}`, "a.b", Number, "2", "", 22}, // the first "a" holding b
		{`{"a":1,"a":2}`, "a", Number, "1", "", 5},                // the first of duplicates
		{`{"a":[10,{"b":[true,false,null]}]}`, "a.1.b.2", Null, "null", "", 26},
		{`[{"a":"x"},{"a":"y"}]`, "1.a", String, `"y"`, "y", 16},
		{`{"a\"b":"\u00e9\ud83d\ude00\n"}`, `a"b`, String, `"\u00e9\ud83d\ude00\n"`, "é😀\n", 8},
		{`{"org.id":"x","org":{"id":"y"}}`, `org\.id`, String, `"x"`, "x", 10},
		{`{"org.id":"x","org":{"id":"y"}}`, `org.id`, String, `"y"`, "y", 26},
		{`{"a":[1,2]}`, "a", JSON, "[1,2]", "", 5},
		{`{"a" : { "b" : 3 } }  `, "a.b", Number, "3", "", 15},
		{`["x{\"a\":1}",{"a":2}]`, "1.a", Number, "2", "", 19},
		{`"ab" {"a":1}`, "a", Number, "1", "", 10}, // the walk starts at the first '[' or '{'
		{`{"a":NaN,"b":-Infinity}`, "b", Number, "-Infinity", "", 13},
		{`{"a":1}`, "a.b", Null, "", "", 0},
		{`{"a":[1,2]}`, "a.x", Null, "", "", 0},
		{`{"a":[1,2]}`, "a.2", Null, "", "", 0},
		{`{"a":{"b":1}`, "a", JSON, `{"b":1}`, "", 5},
		{`{"a":{"b":1`, "a", JSON, `{"b":1`, "", 5}, // cut short: the rest
		{`{"a":"cut`, "a", Null, "", "", 0},
		{`[5,6]`, "18446744073709551617", Number, "6", "", 3}, // the index wraps, as gjson's did
		{`{"a":(1,"b":2),"b":3}`, "b", Number, "2)", "", 12},  // invalid: as gjson read it
		{`{"a\\":1,"a":2}`, `a\\`, Number, "1", "", 7},
		{`{"a":1}`, `a\`, Number, "1", "", 5}, // a '\' at the end is dropped
		{`123`, "a", Null, "", "", 0},
		{`{"!x":1,"[a":2}`, "[a", Number, "2", "", 13}, // no subselectors: literal
		{`{"!x":1,"[a":2}`, "!x", Number, "1", "", 6},  // no static values: literal
	} {
		v := Get(c.doc, c.path)
		if v.Type != c.typ || v.Raw != c.raw || v.Str != c.str || v.Index != c.index {
			t.Errorf("Get(%s, %q) = %+v, want %v %q %q at %d", c.doc, c.path, v, c.typ, c.raw, c.str, c.index)
		}
	}
}

func TestConversions(t *testing.T) {
	for _, c := range []struct {
		doc string
		str string
		i   int64
		u   uint64
		f   float64
		b   bool
	}{
		{`12`, "12", 12, 12, 12, true},
		{`-7`, "-7", -7, 18446744073709551609, -7, true}, // uint64(-7.0)
		{`9007199254740993`, "9007199254740993", 9007199254740993, 9007199254740993, 9007199254740992, true},
		{`-9007199254740993`, "-9007199254740993", -9007199254740993, 18437736874454810624, -9007199254740992, true},
		{`18446744073709551617`, "18446744073709551617", 1, 1, 18446744073709551616, true},
		{`1.5`, "1.5", 1, 1, 1.5, true},
		{`1e3`, "1000", 1000, 1000, 1000, true},
		{`1e15`, "1000000000000000", 1e15, 1e15, 1e15, true},
		{`-0.0`, "-0", 0, 0, 0, false},
		{`"42"`, "42", 42, 42, 42, false},
		{`"-42"`, "-42", -42, 0, -42, false},
		{`"4.2"`, "4.2", 0, 0, 4.2, false},
		{`"TRUE"`, "TRUE", 0, 0, 0, true},
		{`"t"`, "t", 0, 0, 0, true},
		{`true`, "true", 1, 1, 1, true},
		{`false`, "false", 0, 0, 0, false},
		{`null`, "", 0, 0, 0, false},
		{`{"a":1}`, `{"a":1}`, 0, 0, 0, false},
	} {
		v := Get(`{"v":`+c.doc+`}`, "v")
		if v.String() != c.str || v.Int() != c.i || v.Uint() != c.u || v.Float() != c.f || v.Bool() != c.b {
			t.Errorf("%s: String %q Int %d Uint %d Float %v Bool %v", c.doc, v.String(), v.Int(), v.Uint(), v.Float(), v.Bool())
		}
	}
	if v := Get(`{"v":1e400}`, "v"); !math.IsInf(v.Num, 1) || v.String() != "+Inf" {
		t.Errorf("1e400: %+v %q", v, v.String())
	}
}

func TestMembers(t *testing.T) {
	v := Parse(` {"a":1,"b":[true,"x"],"a":2}  `)
	if v.Raw != `{"a":1,"b":[true,"x"],"a":2}  ` || v.Index != 1 || !v.IsObject() {
		t.Fatalf("Parse: %+v", v)
	}
	var got []string
	v.ForEach(func(k, e Value) bool { got = append(got, k.String()+"="+e.Raw); return true })
	if strings.Join(got, " ") != `a=1 b=[true,"x"] a=2` {
		t.Errorf("ForEach: %v", got)
	}
	if m := v.Map(); len(m) != 2 || m["a"].Raw != "1" {
		t.Errorf("Map: %v", m)
	}
	a := v.Get("b").Array()
	if len(a) != 2 || a[0].Type != True || a[1].Str != "x" || a[1].Index != 18 {
		t.Errorf("Array: %+v", a)
	}
	if a := Parse(`3`).Array(); len(a) != 1 || a[0].Num != 3 {
		t.Errorf("Array of a number: %+v", a)
	}
	if a := (Value{}).Array(); a == nil || len(a) != 0 {
		t.Errorf("Array of nothing: %+v", a)
	}
	n := 0
	Parse(`[1,2,3]`).ForEach(func(k, e Value) bool { n++; return k.Num < 1 })
	if n != 2 {
		t.Errorf("ForEach did not stop: %d calls", n)
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"sub": "sub", "a.b": `a\.b`, "https://x.io/t|x": `https:\/\/x\.io\/t\|x`,
		`a\b`: `a\\b`, "é-_: ": "é-_: ", "#*?@!": `\#\*\?\@\!`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
		if v := Get(`{`+quote(in)+`:1}`, Escape(in)); v.Raw != "1" {
			t.Errorf("Get(Escape(%q)) = %+v", in, v)
		}
	}
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// A walk keeps one level per name of its path, not per level of the
// document's nesting, and reads plain names without allocating.
func TestGetBounded(t *testing.T) {
	deep := strings.Repeat(`[`, 200000) + strings.Repeat(`]`, 200000)
	if v := Get(`{"a":`+deep+`,"b":1}`, "b"); v.Raw != "1" {
		t.Errorf("past a deep array: %+v", v)
	}
	if v := Get(deep, strings.Repeat("0.", 199998)+"0"); v.Raw != "[]" {
		t.Errorf("down a deep array: %q", v.Raw)
	}
	doc := `{"choices":[{"delta":{}}],"usage":{"prompt_tokens":12,"completion_tokens":30}}`
	if n := testing.AllocsPerRun(100, func() { Get(doc, "usage.completion_tokens") }); n != 0 {
		t.Errorf("Get allocates %v times", n)
	}
	// Escaped keys, passed over or matched, are compared on the stack.
	esc := `{"\u0061b":1,"x\"y\n":2,"` + strings.Repeat(`\/`, 100) + `":3,"\uZZ12":5,"\u0075sage":{"n":4}}`
	for path, want := range map[string]string{"usage.n": "4", `x"y` + "\n": "2", "ab": "1"} {
		if v := Get(esc, path); v.Raw != want {
			t.Errorf("Get(%s, %q) = %q, want %s", esc, path, v.Raw, want)
		}
		if n := testing.AllocsPerRun(100, func() { Get(esc, path) }); n != 0 {
			t.Errorf("Get(%s, %q) allocates %v times", esc, path, n)
		}
	}
}

// BenchmarkGet reads a usage field past a choices array, as package usage
// does for each event.
func BenchmarkGet(b *testing.B) {
	doc := `{"id":"c1","choices":[{"index":0,"delta":{"content":"hello there"},"finish_reason":null}],"usage":{"prompt_tokens":12,"completion_tokens":30}}`
	b.ReportAllocs()
	for b.Loop() {
		if Get(doc, "usage.completion_tokens").Num != 30 {
			b.Fatal("misread")
		}
	}
}

// hex4 reads what strconv.ParseUint(s, 16, 64) reads, which gjson used,
// without its error's allocation.
func TestHex4(t *testing.T) {
	const alphabet = "09afAFgG+-_x \x00\"\\"
	s := make([]byte, 4)
	for n := 0; n < len(alphabet)*len(alphabet)*len(alphabet)*len(alphabet); n++ {
		for i, m := 0, n; i < 4; i, m = i+1, m/len(alphabet) {
			s[i] = alphabet[m%len(alphabet)]
		}
		want, err := strconv.ParseUint(string(s), 16, 64)
		if err != nil {
			want = 0
		}
		if got := hex4(string(s)); got != rune(want) {
			t.Fatalf("hex4(%q) = %d, want %d", s, got, want)
		}
	}
}
