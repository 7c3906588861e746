package filter

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// A rule name in two configurations of one plugin names the same Redis
// keys, so it must build its key alike in both: every field of a key part
// that changes the key is compared. With x-user in one and client_ip in
// the other, a request with "x-user: 10.1.2.3" spent client 10.1.2.3's
// quota in the other entry.
func TestMatchRuleKeysMustAgree(t *testing.T) {
	conf := func(top, entry, hops string) string {
		rule := func(key string) string {
			return `"rules":[{"name":"api","key":[` + key + `],"limits":[{"algorithm":"sliding_log","limit":5,"window":"1s"}]}]`
		}
		return `{"redis":{"cluster":"r"},` + rule(top) + `,"_rules_":[{"_match_route_":["x"],"redis":{"cluster":"r"},` + hops + rule(entry) + `}]}`
	}
	const ip = `{"source":"client_ip"}`
	for _, tc := range []struct {
		top, entry, hops string
		refused          bool
	}{
		{ip, ip, ``, false},
		{`{"source":"header","name":"X-User"}`, `{"source":"header","name":"x-user"}`, ``, false}, // header names are case-insensitive
		{`{"source":"header","name":"x-user"}`, ip, ``, true},
		{`{"source":"header","name":"x-user"}`, `{"source":"header","name":"x-client"}`, ``, true},
		{`{"source":"header","name":"x-user"}`, `{"source":"query","name":"x-user"}`, ``, true},
		{ip, `{"source":"client_ip","ipv4_prefix_len":24}`, ``, true},
		{`{"source":"client_ip","ipv6_prefix_len":64}`, `{"source":"client_ip","ipv6_prefix_len":48}`, ``, true},
		{`{"source":"constant","value":"a"}`, `{"source":"constant","value":"b"}`, ``, true},
		{`{"source":"jwt_claim","name":"sub"}`, `{"source":"jwt_claim","name":"sub","payload_in_metadata":"p"}`, ``, true},
		{`{"source":"property","path":"a.b"}`, `{"source":"property","path":"a.c"}`, ``, true},
		{ip + `,{"source":"path"}`, `{"source":"path"},` + ip, ``, true},
		{ip, ip + `,{"source":"path"}`, ``, true},
		{ip, ip, `"xff_trusted_hops":1,`, true},
		{`{"source":"path"}`, `{"source":"path"}`, `"xff_trusted_hops":1,`, false},
	} {
		_, err := config.Parse([]byte(conf(tc.top, tc.entry, tc.hops)))
		switch {
		case !tc.refused && err != nil:
			t.Errorf("%s | %s %s: %v", tc.top, tc.hops, tc.entry, err)
		case tc.refused && (err == nil || !strings.HasPrefix(err.Error(), `_rules_[0].rules[0].key: rule "api" `)):
			t.Errorf("%s | %s %s: got %v, want _rules_[0].rules[0].key: ...", tc.top, tc.hops, tc.entry, err)
		}
	}
}

// A request uses one configuration, the top level's or one _rules_
// entry's, so MaxRequestLimits bounds each on its own: 8 limits at the top
// and 8 in each entry are accepted, 9 in one entry are not.
func TestRequestLimitsBoundEachConfiguration(t *testing.T) {
	rules := func(n int) string {
		var rs []string
		for i := range n {
			rs = append(rs, fmt.Sprintf(`{"name":"r%d","key":[{"source":"path"}],"limits":[{"algorithm":"sliding_log","limit":5,"window":"1s"}]}`, i))
		}
		return `"redis":{"cluster":"r"},"rules":[` + strings.Join(rs, ",") + `]`
	}
	entry := func(n int) string { return `{"_match_route_":["x"],` + rules(n) + `}` }
	if _, err := config.Parse([]byte(`{` + rules(8) + `,"_rules_":[` + entry(8) + `,` + entry(8) + `]}`)); err != nil {
		t.Fatal(err)
	}
	_, err := config.Parse([]byte(`{` + rules(8) + `,"_rules_":[` + entry(8) + `,` + entry(9) + `]}`))
	if err == nil || !strings.HasPrefix(err.Error(), "_rules_[1].rules[0]: one request may match this rule and rule r1, r2, r3, r4, r5, r6, r7, r8, 9 limits in all; at most 8") {
		t.Fatalf("9 limits in an entry: %v", err)
	}
}

// Rules that no request can match together do not add up: per-route
// rules fit in one configuration.
func TestExclusiveRulesDoNotAddUp(t *testing.T) {
	rule := func(name, match string) string {
		return `{"name":"` + name + `","match":` + match + `,"key":[{"source":"header","name":"x-user"}],"limits":[` +
			`{"name":"s","algorithm":"sliding_log","limit":5,"window":"1s"},{"name":"m","algorithm":"funnel","capacity":5,"rate":1,"period":"1s"},` +
			`{"name":"h","algorithm":"sliding_counter","limit":500,"window":"1h"}]}`
	}
	for name, tc := range map[string]struct {
		matches []string
		ok      bool
	}{
		"exact paths":           {[]string{`{"path":"/a"}`, `{"path":"/b"}`, `{"path":"/c"}`, `{"path":"/d"}`}, true},
		"a path and a prefix":   {[]string{`{"path":"/a/x"}`, `{"path_prefix":"/b/"}`, `{"path_prefix":"/c/"}`}, true},
		"a path under a prefix": {[]string{`{"path":"/b/x"}`, `{"path_prefix":"/b/"}`, `{"path_prefix":"/"}`}, false},
		"nested prefixes":       {[]string{`{"path_prefix":"/b/"}`, `{"path_prefix":"/b/x/"}`, `{"path":"/b/x/y"}`}, false},
		"methods":               {[]string{`{"methods":["GET"]}`, `{"methods":["POST","PUT"]}`, `{"methods":["DELETE"]}`}, true},
		"methods that meet":     {[]string{`{"methods":["GET"]}`, `{"methods":["POST","GET"]}`, `{"methods":["GET","DELETE"]}`}, false},
		"hosts":                 {[]string{`{"hosts":["a.example"]}`, `{"hosts":["b.example"]}`, `{"hosts":["c.example"]}`}, true},
		"header values":         {[]string{`{"headers":[{"name":"x-plan","exact":"free"}]}`, `{"headers":[{"name":"x-plan","exact":"pro"}]}`, `{"headers":[{"name":"x-plan","absent":true}]}`}, true},
		"header prefixes":       {[]string{`{"headers":[{"name":"x-plan","prefix":"fr"}]}`, `{"headers":[{"name":"x-plan","exact":"free"}]}`, `{"headers":[{"name":"x-plan","present":true}]}`}, false},
		"a rule matching any":   {[]string{`{"path":"/a"}`, `{"path":"/b"}`, `{}`}, false},
	} {
		var rules []string
		for i, m := range tc.matches {
			rules = append(rules, rule(fmt.Sprintf("r%d", i), m))
		}
		_, err := config.Parse([]byte(`{"redis":{"cluster":"r"},"rules":[` + strings.Join(rules, ",") + `]}`))
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok %v", name, err, tc.ok)
		}
	}
}
