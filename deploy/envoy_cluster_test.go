package deploy

import (
	"net"
	"os"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	wasmfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/wasm/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// envoy-cluster.yaml is envoy.yaml but for the filter's configuration and
// the Webdis clusters: a valid Envoy v3 bootstrap (the checks of
// envoy_test.go) whose filter lists every node of a 6-node Redis Cluster
// in redis.nodes, each with an Envoy cluster of its own reaching the
// Webdis on that node's host (deploy/webdis/node.json, port 7379).
func TestEnvoyClusterBootstrap(t *testing.T) {
	b, doc := envoyBootstrapFile(t, EnvoyClusterBootstrap)
	plain, _ := envoyBootstrap(t)
	_, js, cfg := envoyPlugin(t, b)

	// Everything but the filter's configuration and the Webdis clusters
	// is envoy.yaml's.
	if !sameButPluginConfig(t, b, plain) {
		t.Error("envoy-cluster.yaml's admin, listener and wasm filter differ from envoy.yaml's (beyond the filter's configuration)")
	}

	if cfg.Redis.Transport != config.TransportWebdis || !cfg.Redis.ClusterMode || cfg.Redis.Cluster != "" {
		t.Errorf("redis: transport %v, cluster_mode %v, cluster %q: want webdis, true and no cluster (redis.nodes)",
			cfg.Redis.Transport, cfg.Redis.ClusterMode, cfg.Redis.Cluster)
	}
	if len(cfg.Redis.Nodes) != 6 {
		t.Fatalf("redis.nodes: %d, want the 6 nodes of 3 masters and 3 replicas", len(cfg.Redis.Nodes))
	}
	eps := envoyEndpoints(t, b)
	if eps["echo"] != "echo:8080" || len(eps) != 1+len(cfg.Redis.Nodes) {
		t.Errorf("clusters %v: want echo and one per node", eps)
	}
	for i, n := range cfg.Redis.Nodes {
		host, port, err := net.SplitHostPort(n.Address)
		if err != nil || port != "6379" {
			t.Errorf("redis.nodes[%d].address %q: want host:6379", i, n.Address)
		}
		if want := "webdis-" + itoa(i); n.Cluster != want || eps[n.Cluster] != host+":7379" {
			t.Errorf("redis.nodes[%d]: cluster %q at %q, want %s at %s:7379, the Webdis beside the node", i, n.Cluster, eps[n.Cluster], want, host)
		}
	}

	data, err := os.ReadFile(repoPath("deploy/webdis/node.json"))
	if err != nil {
		t.Fatal(err)
	}
	w := checkWebdisEnables(t, "deploy/webdis/node.json", data, cfg, "CLUSTER", "FCALL")
	if w.RedisHost != "127.0.0.1" || w.RedisPort != 6379 || w.HTTPPort != 7379 {
		t.Errorf("node.json: redis %s:%d, http port %d: want its own node, 127.0.0.1:6379, and 7379", w.RedisHost, w.RedisPort, w.HTTPPort)
	}

	generic, err := EnvoyPluginConfigs(doc.JSON)
	if err != nil || len(generic) != 1 || string(generic[0]) != string(js) {
		t.Errorf("EnvoyPluginConfigs: %v, %d configs", err, len(generic))
	}
}

// sameButPluginConfig says whether two bootstraps have the same admin,
// listener, HTTP connection manager and wasm filter, but for the filter's
// configuration string (clusters are not compared).
func sameButPluginConfig(t *testing.T, a, b *bootstrapv3.Bootstrap) bool {
	t.Helper()
	strip := func(x *bootstrapv3.Bootstrap) (*hcmv3.HttpConnectionManager, *wasmfilterv3.Wasm, *listenerv3.Listener) {
		hcm := httpConnectionManager(t, x)
		w := unpack(t, hcm.GetHttpFilters()[0].GetTypedConfig(), &wasmfilterv3.Wasm{})
		w.Config.Configuration = nil
		hcm.HttpFilters[0].ConfigType = nil
		l := proto.Clone(x.GetStaticResources().GetListeners()[0]).(*listenerv3.Listener)
		l.FilterChains[0].Filters[0].ConfigType = nil
		return hcm, w, l
	}
	h1, w1, l1 := strip(a)
	h2, w2, l2 := strip(b)
	return proto.Equal(a.GetAdmin(), b.GetAdmin()) && proto.Equal(h1, h2) && proto.Equal(w1, w2) && proto.Equal(l1, l2)
}
