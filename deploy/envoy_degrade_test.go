package deploy

import "testing"

// EnvoyDegrade is the bootstrap that routes degraded requests to a
// fallback cluster.
const EnvoyDegrade = "deploy/envoy-degrade.yaml"

// envoy-degrade.yaml is a valid Envoy bootstrap whose first route sends the
// requests carrying the degrade rule's header to the fallback cluster, and
// the others on the same prefix to the primary.
func TestEnvoyDegradeBootstrap(t *testing.T) {
	doc, err := ReadYAMLOne(repoPath(EnvoyDegrade))
	if err != nil {
		t.Fatal(err)
	}
	b, err := loadBootstrap(t, doc.JSON)
	if err != nil {
		t.Fatalf("%s is not a valid Envoy v3 bootstrap: %v", EnvoyDegrade, err)
	}
	_, _, cfg := envoyPlugin(t, b)
	header := ""
	for _, r := range cfg.Rules {
		if r.OnLimit.Degrade {
			header = r.OnLimit.Header
		}
	}
	if header == "" {
		t.Fatal("no rule degrades")
	}
	vhosts := httpConnectionManager(t, b).GetRouteConfig().GetVirtualHosts()
	if len(vhosts) != 1 || len(vhosts[0].GetRoutes()) != 2 {
		t.Fatalf("want one virtual host with two routes, got %v", vhosts)
	}
	fallback, primary := vhosts[0].GetRoutes()[0], vhosts[0].GetRoutes()[1]
	hs := fallback.GetMatch().GetHeaders()
	if len(hs) != 1 || hs[0].GetName() != header || !hs[0].GetPresentMatch() ||
		fallback.GetRoute().GetCluster() != "llm-fallback" {
		t.Errorf("first route %v: want %s present to cluster llm-fallback", fallback, header)
	}
	if primary.GetMatch().GetPrefix() != fallback.GetMatch().GetPrefix() || len(primary.GetMatch().GetHeaders()) != 0 ||
		primary.GetRoute().GetCluster() != "llm-primary" {
		t.Errorf("second route %v: want the same prefix, no header, to cluster llm-primary", primary)
	}
	eps := envoyEndpoints(t, b)
	if eps[cfg.Redis.Cluster] != "webdis:7379" || eps["llm-primary"] == "" || eps["llm-fallback"] == "" || len(eps) != 3 {
		t.Errorf("clusters %v: want llm-primary, llm-fallback and %s (redis.cluster)", eps, cfg.Redis.Cluster)
	}
}
