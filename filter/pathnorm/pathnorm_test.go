package pathnorm

import (
	"strings"
	"testing"
)

// What stays apart: another resource for Envoy and for most servers.
func TestNormalizeKeepsDistinctPaths(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/", "/"},
		{"", ""},
		{"*", "*"},
		{"/a/", "/a/"},
		{"/a//", "/a/"},
		{"/a/b/..", "/a/"},
		{"/a/b/.", "/a/b/"},
		{"/..", "/"},
		{"/A", "/A"},
		{"/a%2Fb", "/a%2Fb"},
		{"/a%2fb", "/a%2Fb"},
		{"/a%5cb", "/a%5Cb"},
		{"/a%3Bb", "/a%3Bb"},
		{"/a%3fb", "/a%3Fb"},
		{"/a%25", "/a%25"},
		{"/a%", "/a%25"},
		{"/a%zz", "/a%25zz"},
		{"/a%00b", "/a%00b"},
		{"/a%20b", "/a%20b"},
		{"/caf%C3%A9", "/caf\xc3\xa9"},
		{"/a/%2e%2e%2fb", "/a/..%2Fb"},
	} {
		if got := Normalize(c.in); got != c.want {
			t.Errorf("Normalize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A normal path costs no allocation; a path to normalize costs one.
func TestNormalizeAllocations(t *testing.T) {
	for p, want := range map[string]float64{"/api/v1/items?q=1": 0, "/api//v1/%7C/../items": 1} {
		if n := testing.AllocsPerRun(100, func() { _ = Normalize(p) }); n != want {
			t.Errorf("Normalize(%q): %v allocations, want %v", p, n, want)
		}
	}
}

// Normalize is idempotent, linear, and its output has no empty, "."
// or ".." segment, no raw "\", ";", "?" or "#", and only valid escapes.
func FuzzNormalize(f *testing.F) {
	for _, p := range []string{"/api/v1/items%7C7", "//api//v1///items|7", "/api/v1/x/..;/items|7", "/a/b/../../..", "/%2e%2E/%", "/a;b/c;d", `\\a\..\b`, "/%%41", "/a/%2F..", "/" + strings.Repeat("../", 50)} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		n := Normalize(p)
		if again := Normalize(n); again != n {
			t.Fatalf("not idempotent: %q -> %q -> %q", p, n, again)
		}
		if len(n) > 3*len(p)+1 {
			t.Fatalf("%q grew to %d bytes", p, len(n))
		}
		if !strings.HasPrefix(p, "/") || strings.ContainsAny(p[:strings.IndexAny(p+"?#", "?#")], "?#") {
			return
		}
		if strings.ContainsAny(n, `\;?#`) || strings.Contains(n, "//") {
			t.Fatalf("%q -> %q", p, n)
		}
		for _, seg := range strings.Split(n, "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("%q -> %q keeps a dot segment", p, n)
			}
		}
		for i := strings.IndexByte(n, '%'); i >= 0; i = strings.IndexByte(n, '%') {
			if i+2 >= len(n) || unhex(n, i+1) < 0 || unhex(n, i+2) < 0 {
				t.Fatalf("%q -> %q: bad escape", p, n)
			}
			n = n[i+1:]
		}
	})
}
