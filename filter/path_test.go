package filter

import (
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// pathAliases are spellings of /api/v1/items|7 a client could send to get
// a fresh key each: before normalizePath each was its own key.
var pathAliases = []string{
	"/api/v1/items|7",
	"/api/v1/items%7C7",
	"/api/v1/items%7c7",
	"//api//v1///items|7",
	"/api/x/../v1/items|7",
	"/api/./v1/items|7",
	"/api/v1/items|7;jsessionid=1",
	"/api;x=1/v1/items|7",
	"/api/v1/x/..;/items|7",
	"/%61pi/v1/items%7C7",
	`/api\v1\items|7`,
	"/api/v1/items|7?q=1#f",
	"/api/v1/%2E%2E/v1/items|7",
	"/../api/v1/items|7",
	"/api/v1/items|7#frag",
	"/api/v1/%2e/items%7C%37",
}

func TestPathAliasesAreOnePath(t *testing.T) {
	const want = "/api/v1/items|7"
	rule := config.Rule{Name: "p", Key: []config.KeyPart{{Source: config.SourcePath}}}
	keys := map[string]bool{}
	for _, p := range pathAliases {
		if got := normalizePath(p); got != want {
			t.Errorf("normalizePath(%q) = %q, want %q", p, got, want)
		}
		r := request{headers: appendHeaderMap(nil, [][2]string{{":path", p}})}
		key, ok := appendRuleKey(nil, "rl:", &rule, &r, 0)
		if !ok {
			t.Fatalf("%q: no key", p)
		}
		keys[string(key)] = true
	}
	if len(keys) != 1 {
		t.Fatalf("%d spellings gave %d keys: %v", len(pathAliases), len(keys), keys)
	}
}

// What stays apart: another resource for Envoy and for most servers.
func TestPathNormalizationKeepsDistinctPaths(t *testing.T) {
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
		if got := normalizePath(c.in); got != c.want {
			t.Errorf("normalizePath(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A rule matches the normalized path: /x/../admin and //admin are /admin.
func TestMatchUsesNormalizedPath(t *testing.T) {
	m := config.Match{PathPrefix: "/admin/"}
	for _, p := range []string{"/admin/x", "//admin/x", "/x/../admin/x", "/%61dmin/x", "/admin;a/x"} {
		r := request{headers: appendHeaderMap(nil, [][2]string{{":path", p}})}
		if !matches(&m, &r) {
			t.Errorf("%q does not match path_prefix /admin/", p)
		}
	}
}

// A normal path costs no allocation; a path to normalize costs one.
func TestNormalizePathAllocations(t *testing.T) {
	for p, want := range map[string]float64{"/api/v1/items?q=1": 0, "/api//v1/%7C/../items": 1} {
		if n := testing.AllocsPerRun(100, func() { _ = normalizePath(p) }); n != want {
			t.Errorf("normalizePath(%q): %v allocations, want %v", p, n, want)
		}
	}
}

// normalizePath is idempotent, linear, and its output has no empty, "."
// or ".." segment, no raw "\", ";", "?" or "#", and only valid escapes.
func FuzzNormalizePath(f *testing.F) {
	for _, p := range pathAliases {
		f.Add(p)
	}
	for _, p := range []string{"/a/b/../../..", "/%2e%2E/%", "/a;b/c;d", `\\a\..\b`, "/%%41", "/a/%2F..", "/" + strings.Repeat("../", 50)} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		n := normalizePath(p)
		if again := normalizePath(n); again != n {
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
