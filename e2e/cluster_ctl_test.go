package e2e

// Test 3d of issue 32, the filter's side (cmd/ratelimitctl's
// TestClusterReplicas has the command's): ratelimitctl --cluster sets a
// tier and an override for keys on two masters, and the stock build, over
// a Webdis per node, decides by them once its epoch read sees the change.

import (
	"strconv"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

func TestClusterCtlTiers(t *testing.T) {
	t.Parallel()
	c := redistest.StartClusterWith(t, redistest.ClusterOptions{Masters: 3})
	w := startClusterWebdis(t, c, "FCALL", "CLUSTER")
	prefix := redistest.Prefix(t)
	nodes, clusters := w.nodes(t, "")
	config := nodesConfig(prefix, "deny", nodes, "", tierRules)
	// One VM: once it admits after a change, its deny cache has dropped
	// what the change made stale (see TestTiersAndOverridesEndToEnd).
	tg := startHost(t, wasmhost.Config{Module: stockModule, PluginConfig: []byte(config), HTTPClusters: clusters, Workers: 1})
	ctl := newCtl(t, config, "--cluster", "--redis", strings.Join(c.Addrs(), ","))

	// alice, and a user whose key is on another master.
	owner := func(u string) string {
		m, err := c.MasterFor(prefix + "{red|" + u + "}:tier")
		if err != nil {
			t.Fatal(err)
		}
		return m.Addr
	}
	users := []string{"alice"}
	for i := 0; len(users) < 2; i++ {
		if u := "bob" + strconv.Itoa(i); owner(u) != owner("alice") {
			users = append(users, u)
		}
	}
	const (
		redFree     = `"red.free";q=2;w=3600`
		redPro      = `"red.pro";q=4;w=3600`
		redOverride = `"red.override";q=10;w=3600`
	)
	for _, u := range users {
		r := map[string]string{":path": "/r/", "x-user": u}
		runTierSteps(t, tg, []tierStep{
			{r, 200, `"red.free";r=1;`, redFree},
			{r, 200, `"red.free";r=0;`, redFree},
			{r, 429, `"red.free";r=0;`, redFree},
		})
		ctl.run("tier", "set", "--rule", "red", "--tier", "pro", "--", u)
		tierStep{r, 200, `"red.pro";r=1;`, redPro}.check(t, u+" after tier set pro", untilAdmitted(t, tg, r))
		var sh ctlShown
		ctl.json(&sh, "show", "--rule", "red", "--", u)
		if sh.Tier != "pro" || sh.AssignedTier == nil || sh.AssignedTier.Value != "pro" || len(sh.Limits) != 1 || sh.Limits[0].Used != 3 {
			t.Errorf("show red %s: %+v; want tier pro assigned, 3 used", u, sh)
		}

		ctl.run("override", "set", "--rule", "red", "--limits", `[{"algorithm":"sliding_log","limit":10,"window":"1h"}]`, "--", u)
		tierStep{r, 200, `"red.override";r=6;`, redOverride}.check(t, u+" after override set", untilAdmitted(t, tg, r))

		ctl.run("reset", "--all", "--rule", "red", "--", u)
		tierStep{r, 200, `"red.free";r=1;`, redFree}.check(t, u+" after reset --all", untilAdmitted(t, tg, r))
		t.Logf("%s on %s: decided by the tier, the override and the reset", u, owner(u))
	}
	if m := metricsOf(tg); m["redis.errors"] != 0 || m["failure_mode.denied"] != 0 {
		t.Errorf("metrics %v; want no Redis error", m)
	}
}
