package headermap

import (
	"slices"
	"testing"
)

func TestHeaderMapReadsInPlace(t *testing.T) {
	pairs := [][2]string{{":path", "/a"}, {"X-User", "alice"}, {"x-user", "bob"}, {"empty", ""}}
	m := Valid(Append(nil, pairs))
	var got [][2]string
	for c := m.Cursor(); ; {
		k, v, ok := c.Next()
		if !ok {
			break
		}
		got = append(got, [2]string{k, v})
	}
	if !slices.Equal(got, pairs) {
		t.Fatalf("entries %q, want %q", got, pairs)
	}
	if v, ok := m.First("x-user"); !ok || v != "alice" {
		t.Errorf("First(x-user) = %q %v, want the first value, alice", v, ok)
	}
	if v, ok := m.Values("x-user"); !ok || v != "alice, bob" {
		t.Errorf("Values(x-user) = %q %v, want the values joined", v, ok)
	}
	if _, ok := m.First("missing"); ok {
		t.Error("First(missing) found a value")
	}
	if n := testing.AllocsPerRun(100, func() { m.First("x-user") }); n != 0 {
		t.Errorf("a lookup allocates %v times, want 0", n)
	}
}

// A map whose sizes run past its end reads as empty.
func TestHeaderMapRejectsBadSizes(t *testing.T) {
	good := Append(nil, [][2]string{{"a", "b"}})
	for name, b := range map[string][]byte{
		"short":         good[:3],
		"count too big": append([]byte{9, 0, 0, 0}, good[4:]...),
		"truncated":     good[:len(good)-1],
		"huge size":     append([]byte{1, 0, 0, 0, 255, 255, 255, 127}, good[8:]...),
	} {
		if m := Valid(b); m != nil {
			t.Errorf("%s: accepted %q", name, b)
		}
	}
	if Valid(good) == nil {
		t.Error("rejected a good map")
	}
}

func FuzzHeaderMap(f *testing.F) {
	f.Add([]byte(Append(nil, [][2]string{{":path", "/"}, {"x-user", "a"}})))
	f.Add([]byte{1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		m := Valid(b)
		for c := m.Cursor(); ; {
			if _, _, ok := c.Next(); !ok {
				break
			}
		}
		m.First("x-user")
	})
}
