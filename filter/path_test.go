package filter

import (
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/headermap"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
	"github.com/redisrate/envoy-redis-ratelimit/filter/pathnorm"
)

// pathAliases are spellings of /api/v1/items|7 a client could send to get
// a fresh key each: before pathnorm.Normalize each was its own key.
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
		if got := pathnorm.Normalize(p); got != want {
			t.Errorf("pathnorm.Normalize(%q) = %q, want %q", p, got, want)
		}
		r := request{headers: headermap.Append(nil, [][2]string{{":path", p}})}
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

// A rule matches the normalized path: /x/../admin and //admin are /admin.
func TestMatchUsesNormalizedPath(t *testing.T) {
	m := config.Match{PathPrefix: "/admin/"}
	for _, p := range []string{"/admin/x", "//admin/x", "/x/../admin/x", "/%61dmin/x", "/admin;a/x"} {
		r := request{headers: headermap.Append(nil, [][2]string{{":path", p}})}
		if !matches(&m, &r) {
			t.Errorf("%q does not match path_prefix /admin/", p)
		}
	}
}

// ratelimitctl builds a path part's key as a request's: normalized.
func TestRuleKeyNormalizesPath(t *testing.T) {
	cfg, err := config.Parse([]byte(`{"redis":{"cluster":"r"},"rules":[{"name":"p","key":[{"source":"path"}],
		"limits":[{"algorithm":"sliding_log","limit":5,"window":"1m"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := keyspace.RuleKey(cfg, &cfg.Rules[0], []string{"/a|b/c"})
	for _, spelling := range []string{"/a%7Cb//c", "/x/../a|b/c", "/a|b;v=1/./c"} {
		if got, err := keyspace.RuleKey(cfg, &cfg.Rules[0], []string{spelling}); err != nil || got != want {
			t.Errorf("RuleKey(%q) = %q, %v; want %q", spelling, got, err, want)
		}
	}
}
