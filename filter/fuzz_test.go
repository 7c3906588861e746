package filter

import (
	"path/filepath"
	"strings"
	"testing"
)

// The config parser never panics; what it accepts has valid rules.
func FuzzParseConfig(f *testing.F) {
	for _, dir := range []string{"testdata/valid", "testdata/invalid"} {
		for _, file := range fixtures(f, filepath.Join(dir, "*.json")) {
			f.Add(readFixture(f, file))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			if c != nil {
				t.Fatal("a config returned with an error")
			}
			return
		}
		if len(c.Rules)+len(c.MatchRules) == 0 || c.Redis.Cluster == "" || strings.ContainsAny(c.Redis.Prefix, "{}") {
			t.Fatalf("accepted a config that limits nothing or breaks keys: %+v", c)
		}
		if f := c.Local; f != nil && (f.Share < 1 || f.Share > shareUnit || f.MaxKeys < 1 || c.FailOpen) {
			t.Fatalf("bad local_fallback accepted: %+v", f)
		}
		rules := c.Rules
		for _, mr := range c.MatchRules {
			if len(mr.Config.Rules) == 0 || mr.Config.Redis != c.Redis || len(mr.Routes)+len(mr.Domains)+len(mr.Services)+len(mr.RoutePrefixes) == 0 {
				t.Fatalf("bad _rules_ entry accepted: %+v", mr)
			}
			rules = append(rules, mr.Config.Rules...)
		}
		for _, r := range rules {
			if !validName(r.Name) || len(r.Key) == 0 || len(r.Limits) == 0 {
				t.Fatalf("bad rule accepted: %+v", r)
			}
			for _, l := range r.Limits {
				if l.Limit.Validate() != nil || l.Limit.CheckCost(r.Cost.Default) != nil {
					t.Fatalf("bad limit accepted: %+v", l)
				}
			}
		}
	})
}

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
		rule := &Rule{Name: "r", OnMissing: MissingShared, Key: []KeyPart{
			{Source: SourceHeader, Name: "x-user"}, {Source: SourceQuery, Name: "x"}, {Source: SourceCookie, Name: "s"},
			{Source: SourceClientIP}, {Source: SourcePath}, {Source: SourceHost}, {Source: SourceMethod},
		}}
		r := &request{headers: appendHeaderMap(nil, [][2]string{{":path", path}, {"x-user", user}, {"cookie", cookie}, {"x-forwarded-for", xff}}),
			source: peer("10.0.0.1:80")}
		key, ok := appendRuleKey(nil, "rl:", rule, r, 2)
		if !ok || len(key) > 8+len(rule.Key)*(maxPartLen+1) || strings.Count(string(key), "{") != 1 || strings.Count(string(key), "}") != 1 {
			t.Fatalf("rule key %q", key)
		}
	})
}
