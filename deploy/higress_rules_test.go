package deploy

import (
	"encoding/json"
	"slices"
	"testing"
)

// The WasmPlugin with matchRules: every rule decodes with its fields known;
// what Higress makes of it (_rules_) parses, with one entry per rule
// holding that rule's lists and config, and the same Redis cluster as the
// McpBridge entry makes.
func TestHigressMatchRulesWasmPlugin(t *testing.T) {
	wp, cfg := higressPlugin(t, HigressMatchRulesWasmPlugin)
	if len(cfg.Rules) == 0 {
		t.Error("defaultConfig limits nothing")
	}
	if len(cfg.MatchRules) != len(wp.MatchRules) {
		t.Fatalf("%d _rules_ entries from %d matchRules", len(cfg.MatchRules), len(wp.MatchRules))
	}
	for i, raw := range wp.MatchRules {
		var r higressMatchRule
		strictDecode(t, HigressMatchRulesWasmPlugin+": matchRules["+itoa(i)+"]", raw, &r)
		mr := cfg.MatchRules[i]
		if !slices.Equal(r.Ingress, mr.Routes) || !slices.Equal(r.Domain, mr.Domains) || !slices.Equal(r.Service, mr.Services) {
			t.Errorf("matchRules[%d]: %+v became %+v", i, r, mr)
		}
		var own struct{ Rules []json.RawMessage }
		if err := json.Unmarshal(r.Config, &own); err != nil || len(own.Rules) != len(mr.Config.Rules) {
			t.Errorf("matchRules[%d]: the entry's rules are not the rule's own config: %v", i, err)
		}
	}
	registryFor(t, cfg.Redis.Cluster, mcpBridge(t, "deploy/higress/mcpbridge.yaml"))
}

// HigressPluginConfig converts as Higress's convertIstioWasmPlugin does.
func TestHigressPluginConfig(t *testing.T) {
	for _, tc := range []struct{ spec, want, err string }{
		{`{"pluginConfig":{"a":1},"defaultConfig":{"b":2},"matchRules":[{"ingress":["x"],"config":{"c":3}}]}`, `{"a":1}`, ""},
		{`{"defaultConfig":{"b":2}}`, `{"b":2}`, ""},
		{`{"defaultConfig":{"b":2},"matchRules":[{"ingress":["ns/a"],"domain":["*.x.com"],"config":{"c":3}},{"service":["s"],"configDisable":true}]}`,
			`{"_rules_":[{"_match_domain_":["*.x.com"],"_match_route_":["ns/a"],"c":3}],"b":2}`, ""},
		{`{"defaultConfig":{"b":2},"defaultConfigDisable":true,"matchRules":[{"service":["s:80"]}]}`, `{"_rules_":[{"_match_service_":["s:80"]}]}`, ""},
		{`{"defaultConfig":{"b":2},"defaultConfigDisable":true,"matchRules":[{"service":["s"],"configDisable":true}]}`, ``, ""},
		{`{"matchRules":[{"service":["s"],"configDisable":true}]}`, `{}`, ""},
		{`{"defaultConfig":{"b":2},"matchRules":[{"config":{"c":3}}]}`, ``, "matchRules[0]: invalid match rule has no match condition"},
	} {
		got, err := HigressPluginConfig([]byte(tc.spec))
		if string(got) != tc.want || (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
			t.Errorf("%s:\ngot  %s, %v\nwant %s, %s", tc.spec, got, err, tc.want, tc.err)
		}
	}
}
