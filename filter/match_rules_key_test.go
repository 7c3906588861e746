package filter

import (
	"fmt"
	"strings"
	"testing"
)

// A rule name in two configurations of one plugin names the same Redis
// keys, so it must build its key alike in both: every field of a key part
// that changes the key is compared. With x-user in one and client_ip in
// the other, a request with "x-user: 10.1.2.3" spent client 10.1.2.3's
// quota in the other entry.
func TestMatchRuleKeysMustAgree(t *testing.T) {
	config := func(top, entry, hops string) string {
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
		_, err := ParseConfig([]byte(config(tc.top, tc.entry, tc.hops)))
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
	if _, err := ParseConfig([]byte(`{` + rules(8) + `,"_rules_":[` + entry(8) + `,` + entry(8) + `]}`)); err != nil {
		t.Fatal(err)
	}
	_, err := ParseConfig([]byte(`{` + rules(8) + `,"_rules_":[` + entry(8) + `,` + entry(9) + `]}`))
	if err == nil || !strings.HasPrefix(err.Error(), "_rules_[1].rules: 9 limits in all; at most 8") {
		t.Fatalf("9 limits in an entry: %v", err)
	}
}
