package filter

import (
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/headermap"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
)

// Key extraction from hostile headers never panics and stays bounded.
func FuzzRuleKey(f *testing.F) {
	f.Add("u1", "/a?x=1", "a=1; s=2", "1.2.3.4, 5.6.7.8")
	f.Add("}{", "/%zz?%zz=%", ";;=;", ",,,")
	f.Fuzz(func(t *testing.T, user, path, cookie, xff string) {
		rule := &config.Rule{Name: "r", OnMissing: config.MissingShared, Key: []config.KeyPart{
			{Source: config.SourceHeader, Name: "x-user"}, {Source: config.SourceQuery, Name: "x"}, {Source: config.SourceCookie, Name: "s"},
			{Source: config.SourceClientIP}, {Source: config.SourcePath}, {Source: config.SourceHost}, {Source: config.SourceMethod},
		}}
		r := &request{headers: headermap.Append(nil, [][2]string{{":path", path}, {"x-user", user}, {"cookie", cookie}, {"x-forwarded-for", xff}}),
			source: peer("10.0.0.1:80")}
		key, ok := appendRuleKey(nil, "rl:", rule, r, 2)
		if !ok || len(key) > 8+len(rule.Key)*(keyspace.MaxPartLen+1) || strings.Count(string(key), "{") != 1 || strings.Count(string(key), "}") != 1 {
			t.Fatalf("rule key %q", key)
		}
	})
}
