package keyspace

import (
	"slices"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// A rule with call parts keys "<prefix>{<rule>|<request parts>}|<call
// parts>}" from parts in configured order, and SplitKey reads back the
// rule and the parts, request parts first, then call parts.
func TestCallKeyRoundTrip(t *testing.T) {
	c := &config.Config{Redis: config.RedisConfig{Prefix: "rl:"}}
	header := config.KeyPart{Source: config.SourceHeader, Name: "x-user"}
	call := config.KeyPart{Source: config.SourceCall, BodyPath: "params.name"}
	method := config.KeyPart{Source: config.SourceCall, BodyPath: "method"}
	for _, tc := range []struct {
		key        []config.KeyPart
		parts      []string
		want       string
		splitParts []string
	}{
		{[]config.KeyPart{header}, []string{"alice"}, "rl:{tools|alice}", []string{"alice"}},
		{[]config.KeyPart{header, call}, []string{"alice", "search"}, "rl:{tools|alice}|search}", []string{"alice", "search"}},
		{[]config.KeyPart{call, header, method}, []string{"web search", "al|ce", "tools/call"},
			"rl:{tools|al%7Cce}|web%20search|tools/call}", []string{"al%7Cce", "web%20search", "tools/call"}},
		{[]config.KeyPart{call}, []string{""}, "rl:{tools}|}", []string{""}},
		{nil, nil, "rl:{tools}", nil},
	} {
		rule := &config.Rule{Name: "tools", Key: tc.key}
		base, err := RuleKey(c, rule, tc.parts)
		if err != nil || base != tc.want {
			t.Fatalf("RuleKey %q: %q %v; want %q", tc.parts, base, err, tc.want)
		}
		for _, suffix := range []string{":0", BlockSuffix, OverrideSuffix} {
			r, parts, got, ok := SplitKey("rl:", base+suffix)
			if !ok || r != "tools" || got != suffix || !slices.Equal(parts, tc.splitParts) && len(parts)+len(tc.splitParts) > 0 {
				t.Fatalf("SplitKey(%q) = %q %q %q %v; want tools %q %q", base+suffix, r, parts, got, ok, tc.splitParts, suffix)
			}
		}
	}
	if _, _, _, ok := SplitKey("rl:", "rl:{tools|a}x}:0"); ok {
		t.Fatal("a key whose call parts do not start with | split")
	}
}
