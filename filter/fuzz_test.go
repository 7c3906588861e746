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

// Any body through a stream with a jsonrpc rule: no panic, at most
// max_keys keys in its decide call, and none sent for a refusal.
func FuzzBatch(f *testing.F) {
	f.Add(jsonArray(toolMsg(1, "search"), toolMsg(2, "deep"), noteMsg("notifications/x"), toolMsg(3, "search")))
	f.Add(jsonArray(toolMsg(1, "a"), toolMsg(2, "b"), toolMsg(3, "c"), toolMsg(4, "d")))
	f.Add(toolMsg(1, "search"))
	f.Add(`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","Name":"y"}}]`)
	f.Add(`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"ping"}]`)
	f.Add(`[]`)
	f.Add(`[1,2]`)
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":9007199254740993}}`)
	f.Fuzz(func(t *testing.T, body string) {
		h := toolsHost(t, "", 100, func(sp *rpcSpec) { sp.j.MaxKeys = 3 })
		h.Down = true // every call fails: failure_mode decides
		o := h.sendCalls(body, "x-user=u")
		if len(o.keys) > 3 || (o.status == 400 || o.status == 413) && o.fcalls != 0 {
			t.Fatalf("%q: %+v", body, o)
		}
	})
}
