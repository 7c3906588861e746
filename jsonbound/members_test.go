package jsonbound

import (
	"strings"
	"testing"
)

func TestMembers(t *testing.T) {
	names := []string{"jsonrpc", "id", "method", "params"}
	for _, c := range []struct {
		obj  string
		want [4]Member
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1,{"id":2}]}}`,
			[4]Member{{Value: `"2.0"`}, {Value: `1`}, {Value: `"m"`}, {Value: `{"a":[1,{"id":2}]}`}}},
		{` { "id" : 1 , "id" : "x" } `, [4]Member{{}, {Value: `"x"`, Many: true}}},
		{`{"\u006dethod":"a","m\u0065thod":"b"}`, [4]Member{{}, {}, {Value: `"b"`, Many: true}}},
		{`{"ID":1,"id":2,"Params":3}`, [4]Member{{}, {Value: `2`, Variant: true}, {}, {Variant: true}}},
		{`{"\u0049d":1}`, [4]Member{{}, {Variant: true}}},
		{`{"idx":1,"i":2,"":3}`, [4]Member{}},
		{`[{"id":1}]`, [4]Member{}},
		{`{"id":1},{"id":2}`, [4]Member{{}, {Value: `1`}}},
		{`{}`, [4]Member{}},
	} {
		got := make([]Member, len(names))
		Members(c.obj, names, got)
		for k := range names {
			if got[k] != c.want[k] {
				t.Errorf("Members(%s)[%s] = %+v; want %+v", c.obj, names[k], got[k], c.want[k])
			}
		}
	}
}

func TestMembersOfNoObject(t *testing.T) {
	dst := []Member{{Value: "x", Many: true}}
	for _, body := range []string{`[{"id":1}]`, `"id"`, ``, `  `} {
		if end := Members(body, []string{"id"}, dst); end != -1 || dst[0] != (Member{}) {
			t.Errorf("Members(%q) = %d, %+v; want -1, nothing", body, end, dst[0])
		}
	}
}

func TestMembersRefusal(t *testing.T) {
	for _, c := range []struct {
		m              Member
		leaf, inParent Refusal
	}{
		{Member{Value: "1"}, 0, 0},
		{Member{Value: "1", Many: true}, 0, RefuseDuplicateParent},
		{Member{Value: "1", Many: true, Variant: true}, RefuseCaseVariant, RefuseCaseVariant},
		{Member{Variant: true}, RefuseCaseVariant, RefuseCaseVariant},
	} {
		if c.m.Refusal(false) != c.leaf || c.m.Refusal(true) != c.inParent {
			t.Errorf("%+v: refusals %v, %v; want %v, %v", c.m, c.m.Refusal(false), c.m.Refusal(true), c.leaf, c.inParent)
		}
	}
}

func TestMembersAllocatesNothing(t *testing.T) {
	obj := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search"}}`
	names := []string{"jsonrpc", "id", "method", "params"}
	dst := make([]Member, len(names))
	if n := testing.AllocsPerRun(100, func() { Members(obj, names, dst) }); n != 0 {
		t.Fatalf("Members: %v allocations", n)
	}
}

// FuzzMembers checks Members against Lookup, name by name, on an object
// a body ReadBody accepts: the value and leaf refusal Lookup(obj, name)
// reads, and for a path going on inside (name + ".x") the refusal
// Lookup meets there, or else what Lookup(Value, "x") reads. Seeds in
// testdata/fuzz/FuzzMembers.
func FuzzMembers(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":1,"X":2}}`), "name")
	f.Add([]byte(`{"\u006dethod":"a","method":"b","Na\u006de":{"x":[1]}}`), "name")
	f.Add([]byte(`{"params":{"x":1},"params":{"x":2},"\u212aey":0}`), "key")
	f.Add([]byte(`{"Ä":1,"ä":2,"":3,"x\"y":4}`), "ä")
	f.Add([]byte(`{"key":1,"ſ":2}`), "\u212aey") // the Kelvin sign, a variant of "key"
	f.Fuzz(func(t *testing.T, in []byte, extra string) {
		text, why := ReadBody(in)
		if why != 0 {
			return
		}
		obj := string(text)
		if i := skipSpace(obj, 0); i == len(obj) || obj[i] != '{' {
			return
		}
		names := []string{"jsonrpc", "id", "method", "params"}
		if add := !strings.Contains(extra, "."); add {
			for _, n := range names {
				if strings.EqualFold(extra, n) {
					add = false
				}
			}
			if add {
				names = append(names, extra)
			}
		}
		got := make([]Member, len(names))
		end := len(strings.TrimRight(obj, " \t\r\n"))
		if at := Members(obj+`,{"jsonrpc":0}]`, names, got); at != end {
			t.Fatalf("%q: Members ends the object at %d; want %d", obj, at, end)
		}
		for k, name := range names {
			m := &got[k]
			v, why := Lookup(obj, name)
			if why != 0 {
				v = ""
			}
			if v != m.Value && m.Refusal(false) == 0 || why != m.Refusal(false) {
				t.Fatalf("%q: Lookup(%q) = %q, %v; Members reads %+v", obj, name, v, why, *m)
			}
			in, inWhy := Lookup(obj, name+".x")
			if r := m.Refusal(true); r != 0 {
				if inWhy != r {
					t.Fatalf("%q: Lookup(%q.x) refusal %v; Members says %v", obj, name, inWhy, r)
				}
				continue
			}
			want, wantWhy := "", Refusal(0)
			if m.Value != "" {
				want, wantWhy = Lookup(m.Value, "x")
			}
			if in != want || inWhy != wantWhy {
				t.Fatalf("%q: Lookup(%q.x) = %q, %v; in the member's value %q, %v", obj, name, in, inWhy, want, wantWhy)
			}
		}
	})
}
