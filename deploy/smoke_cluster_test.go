package deploy

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// envoy-cluster.yaml's plugin configuration, in the stock build of the
// filter, in front of a real Redis Cluster of 3 masters and 3 replicas
// with redis-cluster.conf's settings and users-cluster.acl, each node with
// a real Webdis running webdis/node.json (only addresses changed; the
// nodes' addresses become the names the test's nodes announce): smoke.sh
// passes, and users spread over every master are decided by Redis, with
// no call failing.
func TestSmokeEnvoyClusterPluginConfig(t *testing.T) {
	t.Parallel()
	b, _ := envoyBootstrapFile(t, EnvoyClusterBootstrap)
	_, js, cfg := envoyPlugin(t, b)
	node, err := os.ReadFile(repoPath("deploy/webdis/node.json"))
	if err != nil {
		t.Fatal(err)
	}
	w := decodeWebdis(t, node)

	acl := filepath.Join(t.TempDir(), "users.acl")
	users := renderTemplate(t, "users-cluster.acl", map[string]string{
		"FILTER": filterUser.Password, "OPERATOR": operator.Password, "WEBDIS": w.redisAuth(t),
		"REPLICATION": clusterReplication.Password, "ADMIN": clusterAdmin.Password,
	})
	if err := os.WriteFile(acl, []byte(users), 0o600); err != nil {
		t.Fatal(err)
	}
	c := redistest.StartClusterWith(t, redistest.ClusterOptions{Masters: 3, Replicas: 1, ACL: acl, Admin: clusterAdmin,
		Hostnames: true, Args: append(clusterConfArgs(t), "--masterauth", clusterReplication.Password)})
	masters, err := c.Masters()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range masters {
		op := redistest.NewClient(m.Addr, operator)
		defer op.Close()
		if err := redistest.LoadLibrary(op); err != nil {
			t.Fatal(err)
		}
	}
	if len(cfg.Redis.Nodes) != len(c.Nodes) {
		t.Fatalf("%d nodes in envoy-cluster.yaml, %d in the test's cluster", len(cfg.Redis.Nodes), len(c.Nodes))
	}

	// The shipped configuration, with each node's address as the test's
	// node announces itself, and its cluster reaching that node's Webdis.
	// redis.timeout goes from 250ms to 1m (the most): the test asserts no
	// call failed, and a busy machine can hold one call past 250ms.
	var plugin map[string]any
	if err := json.Unmarshal(js, &plugin); err != nil {
		t.Fatal(err)
	}
	plugin["redis"].(map[string]any)["timeout"] = "1m"
	clusters := map[string]string{}
	for i, n := range plugin["redis"].(map[string]any)["nodes"].([]any) {
		n := n.(map[string]any)
		_, port, _ := net.SplitHostPort(c.Nodes[i].Addr)
		n["address"] = c.Hostname(c.Nodes[i]) + ":" + port
		clusters[n["cluster"].(string)] = startWebdisConfig(t, node, c.Nodes[i].Addr)
	}
	js, err = json.Marshal(plugin)
	if err != nil {
		t.Fatal(err)
	}
	parsePluginConfig(t, "envoy-cluster.yaml's configuration, addresses changed", js)
	h := startHost(t, wasmhost.Config{Module: filterModule(t, ""), PluginConfig: js, Upstream: upstream(t), HTTPClusters: clusters})

	out, err := runSmoke(t, h.URL())
	t.Log(out)
	if err != nil {
		t.Fatalf("smoke.sh: %v", err)
	}
	for i := range 60 { // users whose keys fall on every master
		req, _ := http.NewRequest("GET", h.URL()+"/spread", nil)
		req.Header.Set("x-user-id", "spread-"+strconv.Itoa(i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("RateLimit-Policy") == "" {
			t.Fatalf("user spread-%d: %d, RateLimit-Policy %q", i, resp.StatusCode, resp.Header.Get("RateLimit-Policy"))
		}
	}
	for _, m := range masters {
		admin := redistest.NewClient(m.Addr, clusterAdmin)
		defer admin.Close()
		if n, err := admin.Int("DBSIZE"); err != nil || n == 0 {
			t.Errorf("master %s holds %d keys (%v): the users' calls did not reach it", m.Addr, n, err)
		}
	}
	m := h.Metrics()
	for _, name := range []string{"ratelimit.redis.errors", "ratelimit.failure_mode.allowed", "ratelimit.redis.unknown_node"} {
		if m[name] != 0 {
			t.Errorf("%s = %d, want 0", name, m[name])
		}
	}
	if m["ratelimit.redis.slot_map_loads"] == 0 {
		t.Error("ratelimit.redis.slot_map_loads = 0: CLUSTER NODES was not read through the shipped Webdis and ACL")
	}
	t.Logf("moved %d, slot_map_loads %d", m["ratelimit.redis.moved"], m["ratelimit.redis.slot_map_loads"])
}
