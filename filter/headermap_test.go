package filter

import (
	"slices"
	"testing"
)

func TestHeaderMapReadsInPlace(t *testing.T) {
	pairs := [][2]string{{":path", "/a"}, {"X-User", "alice"}, {"x-user", "bob"}, {"empty", ""}}
	m := validHeaderMap(appendHeaderMap(nil, pairs))
	var got [][2]string
	for c := m.cursor(); ; {
		k, v, ok := c.next()
		if !ok {
			break
		}
		got = append(got, [2]string{k, v})
	}
	if !slices.Equal(got, pairs) {
		t.Fatalf("entries %q, want %q", got, pairs)
	}
	if v, ok := m.first("x-user"); !ok || v != "alice" {
		t.Errorf("first(x-user) = %q %v, want the first value, alice", v, ok)
	}
	r := request{headers: m}
	if v, ok := r.header("x-user"); !ok || v != "alice, bob" {
		t.Errorf("header(x-user) = %q %v, want the values joined", v, ok)
	}
	if _, ok := m.first("missing"); ok {
		t.Error("first(missing) found a value")
	}
	if n := testing.AllocsPerRun(100, func() { m.first("x-user") }); n != 0 {
		t.Errorf("a lookup allocates %v times, want 0", n)
	}
}

// A map whose sizes run past its end reads as empty.
func TestHeaderMapRejectsBadSizes(t *testing.T) {
	good := appendHeaderMap(nil, [][2]string{{"a", "b"}})
	for name, b := range map[string][]byte{
		"short":         good[:3],
		"count too big": append([]byte{9, 0, 0, 0}, good[4:]...),
		"truncated":     good[:len(good)-1],
		"huge size":     append([]byte{1, 0, 0, 0, 255, 255, 255, 127}, good[8:]...),
	} {
		if m := validHeaderMap(b); m != nil {
			t.Errorf("%s: accepted %q", name, b)
		}
	}
	if validHeaderMap(good) == nil {
		t.Error("rejected a good map")
	}
}

func FuzzHeaderMap(f *testing.F) {
	f.Add([]byte(appendHeaderMap(nil, [][2]string{{":path", "/"}, {"x-user", "a"}})))
	f.Add([]byte{1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		m := validHeaderMap(b)
		for c := m.cursor(); ; {
			if _, _, ok := c.next(); !ok {
				break
			}
		}
		m.first("x-user")
	})
}
