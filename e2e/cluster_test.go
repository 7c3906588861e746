package e2e

// Redis Cluster end to end. The filter's keys (docs/operating.md, "Keys and manual
// blocking") are
//
//	<key_prefix>{<rule>|<part>|...}:<limit index>    a limit's state
//	<key_prefix>{<rule>|<part>|...}:block            an operator's block
//
// so everything one rule decides for one request shares the hash tag
// {<rule>|<parts>} and one slot. Here rule "api" keeps {api|<user>}:0 (a
// sliding log), :1 (a sliding counter), :2 (a funnel) and :block in the
// slot of "api|<user>", and rule "route" keeps {route|<user>|<path>}:0 in
// the slot of "route|<user>|<path>", usually elsewhere. With
// redis.cluster_mode each rule is one FCALL whose keys share a slot;
// without it both rules go in one FCALL, which a cluster refuses with
// CROSSSLOT.

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// clusterRules: two rules match every /api/ request.
const clusterRules = `[
	{"name":"api","match":{"path_prefix":"/api/"},"key":[{"source":"header","name":"x-user"}],
	 "limits":[{"name":"minute","algorithm":"sliding_log","limit":4,"window":"1m"},
	           {"name":"hour","algorithm":"sliding_counter","limit":6,"window":"1h"},
	           {"name":"burst","algorithm":"funnel","capacity":8,"rate":1,"period":"1h"}]},
	{"name":"route","match":{"path_prefix":"/api/"},"key":[{"source":"header","name":"x-user"},{"source":"path"}],
	 "limits":[{"algorithm":"funnel","capacity":2,"rate":1,"period":"1h"}]}]`

// clusterConfig sends EVALSHA (redis.command), as the Higress build must
// behind the real redis_proxy, which has no FCALL.
func clusterConfig(prefix string, clusterMode bool, failureMode string) string {
	return fmt.Sprintf(`{"failure_mode":%q,"headers":"both","redis":{"cluster":"redis","command":"evalsha","timeout":"2s","key_prefix":%q,"cluster_mode":%t},"rules":%s}`,
		failureMode, prefix, clusterMode, clusterRules)
}

// startCluster runs the Higress build with Redis cluster "redis" routed by
// the host's model of redis_proxy over the cluster's nodes, which forwards
// FCALL (the real one does not: see startProxyCluster).
func startCluster(t *testing.T, config string, c *redistest.Cluster) *wasmTarget {
	return startHost(t, wasmhost.Config{Module: module, PluginConfig: []byte(config),
		RedisClusterProxy: map[string][]string{"redis": c.Addrs()}})
}

// startProxyCluster is startCluster with the model refusing FCALL as the
// real redis_proxy does (RedisProxyFaithful): config must send EVALSHA.
func startProxyCluster(t *testing.T, config string, c *redistest.Cluster) *wasmTarget {
	return startHost(t, wasmhost.Config{Module: module, PluginConfig: []byte(config),
		RedisClusterProxy: map[string][]string{"redis": c.Addrs()}, RedisProxyFaithful: true})
}

// portableOutcome is what of an outcome must not depend on where Redis runs: all
// but the seconds until reset, which depend on time.
type portableOutcome struct {
	status                                    int
	body, rateLimit, policy, remaining, quota string
	retryAfter                                bool
}

var resetSeconds = regexp.MustCompile(`;t=\d+|,"retry_after":\d+`)

func portableOf(o outcome) portableOutcome {
	return portableOutcome{
		status: o.status, body: resetSeconds.ReplaceAllString(o.body, ""),
		rateLimit: resetSeconds.ReplaceAllString(o.headers["ratelimit"], ""), policy: o.headers["ratelimit-policy"],
		remaining: o.headers["x-ratelimit-remaining"], quota: o.headers["x-ratelimit-limit"],
		retryAfter: o.headers["retry-after"] != "",
	}
}

func TestCluster(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3)

	// The same traffic through one redis-server and through the cluster,
	// both with cluster_mode, decides the same.
	t.Run("cluster_mode decides as a single server does", func(t *testing.T) {
		prefix := redistest.Prefix(t)
		config := clusterConfig(prefix, true, "allow")
		clustered := startProxyCluster(t, config, cluster)
		decidesAsSingleServer(t, cluster, prefix, config, clustered)
		s := clustered.h.RedisClusterStats("redis")
		if s.Redirections != 0 || s.CrossSlot != 0 || s.RedirectionsToGuest != 0 {
			t.Errorf("cluster routing stats %+v; want no redirection and no CROSSSLOT", s)
		}
		var routed int64
		for _, n := range s.NodeCalls {
			routed += n
		}
		// Each VM's ACL WHOAMI (2 VMs) is refused by the proxy itself, as
		// redis_proxy refuses ACL; every other call goes to a node once.
		if calls := clustered.h.RedisCalls()["redis"]; calls == 0 || routed != calls-2 {
			t.Errorf("%d calls from the filter, %d sent to nodes; want each but the 2 ACL WHOAMI sent once", calls, routed)
		}
		t.Logf("calls by node: %v", s.NodeCalls)
	})

	// Without cluster_mode both rules go in one call whose keys are in two
	// slots: the cluster refuses it, and the filter applies failure_mode.
	t.Run("without cluster_mode the cluster answers CROSSSLOT", func(t *testing.T) {
		prefix := redistest.Prefix(t)
		api, route := prefix+"{api|alice}:0", prefix+"{route|alice|/api/a}:0"
		sa, _ := cluster.KeySlot(api)
		sr, _ := cluster.KeySlot(route)
		if sa == sr {
			t.Fatalf("%s and %s share slot %d; the test needs two slots", api, route, sa)
		}
		config := clusterConfig(prefix, false, "deny")
		req := map[string]string{":path": "/api/a", "x-user": "alice"}
		expect(t, startBuild(t, "higress", wasmhost.Config{}, config, server.Addr).send(t, req), 200)

		clustered := startProxyCluster(t, config, cluster)
		const n = 3
		for range n {
			o := clustered.send(t, req)
			expect(t, o, 503)
			if o.body != `{"error":"ratelimit_unavailable"}`+"\n" {
				t.Fatalf("body %q", o.body)
			}
		}
		if e, d := decisionErrors(clustered), clustered.metric("ratelimit.failure_mode.denied"); e != n || d != n {
			t.Errorf("%d redis errors, %d failure-mode denials; want %d each", e, d, n)
		}
		if s := clustered.h.RedisClusterStats("redis"); s.CrossSlot != n || s.Redirections != 0 {
			t.Errorf("cluster routing stats %+v; want %d CROSSSLOT and no redirection", s, n)
		}
		if logs := strings.Join(clustered.h.GuestLogs(wasmhost.LogWarn), "\n"); !strings.Contains(logs, "CROSSSLOT") {
			t.Errorf("the filter's log does not name CROSSSLOT: %q", logs)
		}
	})
}

// Slots migrate under load behind the redis_proxy model (the Higress
// build's documented path): the model follows -ASK with ASKING, the target
// answers the filter's multi-key calls -TRYAGAIN until the handover, and
// the filter retries them; nothing fails and every charge is on the new
// owner (reshardUnderLoad).
func TestClusterProxyReshard(t *testing.T) {
	t.Parallel()
	c := redistest.StartClusterWith(t, redistest.ClusterOptions{Masters: 3})
	prefix := redistest.Prefix(t)
	config := fmt.Sprintf(`{"failure_mode":"deny","redis":{"cluster":"redis","command":"evalsha","timeout":"2s","key_prefix":%q,"cluster_mode":true},"rules":%s}`,
		prefix, reshardRules)
	tg := startProxyCluster(t, config, c)
	reshardUnderLoad(t, c, tg, prefix)
	m, s := metricsOf(tg), tg.h.RedisClusterStats("redis")
	if m["redis.retried"] == 0 || s.Redirections == 0 {
		t.Errorf("metrics %v, redis_proxy stats %+v; want calls retried by the filter and redirections followed by the proxy", m, s)
	}
	t.Logf("metrics %v; redis_proxy stats %+v", m, s)
}

// decidesAsSingleServer sends the same requests, one at a time, to the
// Higress build on the shared redis-server with singleConfig and to
// clustered, a target on c with the same rules, prefix and failure_mode
// allow. Each user sends three requests to /api/a and three to /api/b. Rule
// "route" denies the third on a path; with cluster_mode rule "api" has
// charged it all the same (its own call), so "api" denies the fifth and
// sixth. The answers (but the seconds until reset) and the metrics must be
// the same, the keys on more than one master.
func decidesAsSingleServer(t *testing.T, cluster *redistest.Cluster, prefix, singleConfig string, clustered *wasmTarget) {
	t.Helper()
	single := startBuild(t, "higress", wasmhost.Config{}, singleConfig, server.Addr)
	users := []string{"alice", "bob", "carol", "dave", "erin", "frank", "mallory"}
	const block = "1"
	if _, err := server.Do("SET", prefix+"{api|mallory}:block", block, "EX", 300); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Do(prefix+"{api|mallory}:block", "SET", prefix+"{api|mallory}:block", block, "EX", 300); err != nil {
		t.Fatal(err)
	}
	paths := []string{"/api/a", "/api/a", "/api/a", "/api/b", "/api/b", "/api/b"}
	wantStatus := []int{200, 200, 429, 200, 429, 429}
	wantDenier := map[int]string{2: `"rule":"route"`, 4: `"rule":"api","limit":"minute"`}
	for i, path := range paths {
		for _, u := range users {
			req := map[string]string{":path": path, "x-user": u}
			a, b := portableOf(single.send(t, req)), portableOf(clustered.send(t, req))
			if a != b {
				t.Fatalf("%s %s (request %d): single server %+v, cluster %+v", u, path, i+1, a, b)
			}
			want, denier := wantStatus[i], wantDenier[i]
			if u == "mallory" {
				want, denier = 429, `"error":"blocked","rule":"api"`
			}
			if a.status != want || !strings.Contains(a.body, denier) {
				t.Fatalf("%s %s (request %d): %+v, want %d naming %s", u, path, i+1, a, want, denier)
			}
		}
	}
	for _, m := range []string{"rule.api.allowed", "rule.api.denied", "rule.api.blocked", "rule.route.allowed",
		"rule.route.denied", "redis.errors", "failure_mode.allowed", "failure_mode.denied"} {
		m = "ratelimit." + m
		if a, b := single.metric(m), clustered.metric(m); a != b {
			t.Errorf("%s: single server %d, cluster %d", m, a, b)
		}
	}
	if e := clustered.metric("ratelimit.redis.errors"); e != 0 || clustered.metric("ratelimit.rule.api.denied") != 12 {
		t.Errorf("cluster: %d redis errors, %d api denials; want 0, 12", e, clustered.metric("ratelimit.rule.api.denied"))
	}
	perMaster := keysPerMaster(t, cluster, prefix)
	if len(perMaster) < 2 {
		t.Errorf("keys by master %v: want keys on more than one master", perMaster)
	}
	t.Logf("keys by master: %v", perMaster)
}

// keysPerMaster counts the keys under prefix on each master, by address.
func keysPerMaster(t *testing.T, c *redistest.Cluster, prefix string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, m := range c.Nodes {
		keys, err := m.Client.Strings("KEYS", prefix+"*")
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) > 0 {
			counts[m.Addr] = len(keys)
		}
	}
	return counts
}
