package deploy

import (
	"encoding/json"
	"fmt"
)

// HigressMatchRulesWasmPlugin is a Higress WasmPlugin with matchRules: a
// configuration per route, domain or service.
const HigressMatchRulesWasmPlugin = "deploy/higress/wasmplugin-matchrules.yaml"

// higressMatchRule is an entry of a Higress WasmPlugin's matchRules
// (api/extensions/v1alpha1/wasmplugin.proto, MatchRule).
type higressMatchRule struct {
	Ingress       []string        `json:"ingress"`
	Domain        []string        `json:"domain"`
	Service       []string        `json:"service"`
	Config        json.RawMessage `json:"config"`
	ConfigDisable *bool           `json:"configDisable"`
	RouteType     string          `json:"routeType"`
}

// HigressPluginConfig returns the plugin configuration Higress's controller
// makes of a WasmPlugin spec (JSON), as alibaba/higress's
// pkg/ingress/config/ingress_config.go, convertIstioWasmPlugin, does:
// pluginConfig as it is when set; otherwise defaultConfig (unless
// defaultConfigDisable) with, under "_rules_", every matchRules entry not
// disabled by configDisable: its config, with its ingress list as
// "_match_route_", its service list as "_match_service_" and its domain
// list as "_match_domain_". An entry with none of the three is an error,
// as in Higress. A nil configuration with no error means that Higress
// installs no plugin.
func HigressPluginConfig(spec []byte) ([]byte, error) {
	var s struct {
		PluginConfig         json.RawMessage    `json:"pluginConfig"`
		DefaultConfig        json.RawMessage    `json:"defaultConfig"`
		DefaultConfigDisable *bool              `json:"defaultConfigDisable"`
		MatchRules           []higressMatchRule `json:"matchRules"`
	}
	if err := json.Unmarshal(spec, &s); err != nil {
		return nil, err
	}
	if present(s.PluginConfig) {
		return s.PluginConfig, nil
	}
	disabled := func(b *bool) bool { return b != nil && *b }
	top := map[string]json.RawMessage{}
	if present(s.DefaultConfig) && !disabled(s.DefaultConfigDisable) {
		if err := json.Unmarshal(s.DefaultConfig, &top); err != nil {
			return nil, fmt.Errorf("defaultConfig: %w", err)
		}
	}
	var rules []map[string]any
	for i, r := range s.MatchRules {
		if disabled(r.ConfigDisable) {
			continue
		}
		if r.RouteType != "" && r.RouteType != "HTTP" {
			return nil, fmt.Errorf("matchRules[%d]: routeType %s is not modelled", i, r.RouteType)
		}
		entry := map[string]any{}
		if present(r.Config) {
			if err := json.Unmarshal(r.Config, &entry); err != nil {
				return nil, fmt.Errorf("matchRules[%d].config: %w", i, err)
			}
		}
		for key, list := range map[string][]string{"_match_route_": r.Ingress, "_match_service_": r.Service, "_match_domain_": r.Domain} {
			if len(list) > 0 {
				entry[key] = list
			}
		}
		if len(r.Ingress)+len(r.Service)+len(r.Domain) == 0 {
			return nil, fmt.Errorf("matchRules[%d]: invalid match rule has no match condition", i)
		}
		rules = append(rules, entry)
	}
	if len(rules) == 0 && disabled(s.DefaultConfigDisable) {
		return nil, nil
	}
	if len(rules) > 0 {
		b, err := json.Marshal(rules)
		if err != nil {
			return nil, err
		}
		top["_rules_"] = b
	}
	return json.Marshal(top)
}

func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }
