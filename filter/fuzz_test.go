package filter

import (
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// Key parts are bounded, never hold separators, and stay distinct.
func FuzzKeyPart(f *testing.F) {
	f.Add("user-42", "user-43")
	f.Add("{a}", "%7Ba%7D")
	f.Add(strings.Repeat("x", 70), strings.Repeat("x", 71))
	f.Add("a|b", "a%7Cb")
	f.Fuzz(func(t *testing.T, a, b string) {
		ka, kb := string(appendKeyPart(nil, a)), string(appendKeyPart(nil, b))
		for _, k := range []string{ka, kb} {
			if len(k) > maxPartLen || strings.ContainsAny(k, "{}|:\r\n") {
				t.Fatalf("unsafe part %q", k)
			}
		}
		if a != b && ka == kb {
			t.Fatalf("%q and %q share the part %q", a, b, ka)
		}
	})
}

// Key extraction from hostile headers never panics and stays bounded.
func FuzzRuleKey(f *testing.F) {
	f.Add("u1", "/a?x=1", "a=1; s=2", "1.2.3.4, 5.6.7.8")
	f.Add("}{", "/%zz?%zz=%", ";;=;", ",,,")
	f.Fuzz(func(t *testing.T, user, path, cookie, xff string) {
		rule := &config.Rule{Name: "r", OnMissing: config.MissingShared, Key: []config.KeyPart{
			{Source: config.SourceHeader, Name: "x-user"}, {Source: config.SourceQuery, Name: "x"}, {Source: config.SourceCookie, Name: "s"},
			{Source: config.SourceClientIP}, {Source: config.SourcePath}, {Source: config.SourceHost}, {Source: config.SourceMethod},
		}}
		r := &request{headers: appendHeaderMap(nil, [][2]string{{":path", path}, {"x-user", user}, {"cookie", cookie}, {"x-forwarded-for", xff}}),
			source: peer("10.0.0.1:80")}
		key, ok := appendRuleKey(nil, "rl:", rule, r, 2)
		if !ok || len(key) > 8+len(rule.Key)*(maxPartLen+1) || strings.Count(string(key), "{") != 1 || strings.Count(string(key), "}") != 1 {
			t.Fatalf("rule key %q", key)
		}
	})
}
