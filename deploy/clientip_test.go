package deploy

import "testing"

// No shipped configuration trusts X-Forwarded-For in the filter: the
// client address is the proxy's to compute (docs/proxies.md, "Client address").
// The proxies these files set up trust no hop in front (envoy.yaml's
// xff_num_trusted_hops: 0, the gateways' default), so a hop counted by the
// filter would be an entry a client wrote.
func TestShippedConfigsLeaveTrustedHopsToTheProxy(t *testing.T) {
	all, err := PluginConfigs(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, pc := range all {
		if cfg := parsePluginConfig(t, pc.File+": "+pc.Where, pc.JSON); cfg.TrustedHops != 0 {
			t.Errorf("%s: %s: xff_trusted_hops %d, want 0", pc.File, pc.Where, cfg.TrustedHops)
		}
	}
}
