package jsonbound

import (
	"slices"
	"testing"
)

func TestElements(t *testing.T) {
	for _, c := range []struct {
		body string
		max  int
		want []string
		more bool
	}{
		{`[]`, 8, nil, false},
		{` [ ] `, 8, nil, false},
		{`{"a":1}`, 8, nil, false},
		{`"[1]"`, 8, nil, false},
		{`1`, 8, nil, false},
		{`[1]`, 8, []string{`1`}, false},
		{`[1,"a",null]`, 8, []string{`1`, `"a"`, `null`}, false},
		{"[ {\"a\":[1,{\"b\":\"]\"}]} ,\n[[]] ,\t\"x,y\" ]", 8, []string{`{"a":[1,{"b":"]"}]}`, `[[]]`, `"x,y"`}, false},
		{`[-1.5e3,true,false]`, 8, []string{`-1.5e3`, `true`, `false`}, false},
		{`[1,2,3]`, 3, []string{`1`, `2`, `3`}, false},
		{`[1,2,3]`, 2, []string{`1`, `2`}, true},
		{`[1]`, 0, nil, true},
		{`[]`, 0, nil, false},
	} {
		spans, more := Elements(c.body, nil, c.max)
		var got []string
		for _, s := range spans {
			got = append(got, c.body[s[0]:s[1]])
		}
		if !slices.Equal(got, c.want) || more != c.more {
			t.Errorf("Elements(%q, %d) = %q, %v; want %q, %v", c.body, c.max, got, more, c.want, c.more)
		}
	}
}

func TestElementsAllocatesNothing(t *testing.T) {
	body := `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"},[1,2],"x"]`
	dst := make([][2]int, 0, 8)
	if n := testing.AllocsPerRun(100, func() { dst, _ = Elements(body, dst, 8) }); n != 0 || len(dst) != 4 {
		t.Fatalf("Elements: %v allocations, %d elements; want 0, 4", n, len(dst))
	}
}

func TestElementsNegativeMax(t *testing.T) {
	if spans, more := Elements(`[1]`, nil, -1); len(spans) != 0 || !more {
		t.Fatalf("Elements([1], -1) = %v, %v; want none, more", spans, more)
	}
}
