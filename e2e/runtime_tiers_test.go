package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// tierRules: the three places a tier comes from.
//   - hdr: a trusted header, x-plan (free: 2 an hour; pro: 4 an hour and a
//     funnel of 10). Limit 0 of both tiers shares the key's state.
//   - part: a part of the key, the x-plan header beside x-org; a request
//     without x-plan shares the key of "" and gets the default.
//   - red: Redis, assigned with ratelimitctl, with overrides.
const tierRules = `[
	{"name":"hdr","match":{"path_prefix":"/h/"},"key":[{"source":"header","name":"x-user"}],
	 "tiers":{"from":{"header":"x-plan"},"default":"free","limits":{
	   "free":[{"algorithm":"sliding_log","limit":2,"window":"1h"}],
	   "pro":[{"algorithm":"sliding_log","limit":4,"window":"1h"},
	          {"name":"pro-burst","algorithm":"funnel","capacity":10,"rate":10,"period":"1h"}]}}},
	{"name":"part","match":{"path_prefix":"/p/"},"key":[{"source":"header","name":"x-org"},{"source":"header","name":"x-plan"}],
	 "on_missing_key":"shared",
	 "tiers":{"from":{"key_part":1},"default":"free","limits":{
	   "free":[{"algorithm":"sliding_counter","limit":2,"window":"1h"}],
	   "pro":[{"algorithm":"sliding_counter","limit":3,"window":"1h"}]}}},
	{"name":"red","match":{"path_prefix":"/r/"},"key":[{"source":"header","name":"x-user"}],"overrides":true,
	 "tiers":{"from":"redis","default":"free","limits":{
	   "free":[{"algorithm":"sliding_log","limit":2,"window":"1h"}],
	   "pro":[{"algorithm":"sliding_log","limit":4,"window":"1h"}]}}}]`

// tierStep is one request and what its answer must be: the status, the start
// of RateLimit (the tightest limit's name and r) and RateLimit-Policy.
type tierStep struct {
	req               map[string]string
	status            int
	rateLimit, policy string
}

func (s tierStep) check(t *testing.T, what string, o outcome) {
	t.Helper()
	if o.status != s.status || !strings.HasPrefix(o.headers["ratelimit"], s.rateLimit) || o.headers["ratelimit-policy"] != s.policy {
		t.Fatalf("%s %v: status %d, RateLimit %q, RateLimit-Policy %q (body %q); want %d, %s..., %s", what, s.req,
			o.status, o.headers["ratelimit"], o.headers["ratelimit-policy"], o.body, s.status, s.rateLimit, s.policy)
	}
}

func runTierSteps(t *testing.T, tg target, steps []tierStep) {
	t.Helper()
	for i, s := range steps {
		s.check(t, fmt.Sprintf("request %d", i+1), tg.send(t, s.req))
	}
}

// Tiers from a header, a key part and Redis (set with ratelimitctl), and
// an override whose --ttl runs out on Redis's clock, through both modules:
// the 429s and the RateLimit and RateLimit-Policy headers are those of the
// tier in force.
func TestTiersAndOverridesEndToEnd(t *testing.T) {
	t.Parallel()
	const (
		hdrFree  = `"hdr.free";q=2;w=3600`
		hdrPro   = `"hdr.pro.0";q=4;w=3600, "pro-burst";q=10;w=3600`
		partFree = `"part.free";q=2;w=3600`
		partPro  = `"part.pro";q=3;w=3600`
		redFree  = `"red.free";q=2;w=3600`
		redPro   = `"red.pro";q=4;w=3600`
		// An override's limit is named <rule>.override.
		redOverride = `"red.override";q=10;w=3600`
	)
	for _, kind := range moduleKinds {
		t.Run(kind, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			// One VM: once it admits after a change, its deny cache has
			// dropped what the change made stale (with several, the next
			// request could meet another VM's stale denial; see
			// TestCtlChangesReachEveryVM).
			vms, config := startVMs(t, kind, fmt.Sprintf(`{"redis":{"cluster":"redis","timeout":"2s","key_prefix":%q},"rules":%s}`, prefix, tierRules), 1)
			tg := vms[0]
			c := newCtl(t, config, "--redis", server.Addr)

			h := func(plan string) map[string]string {
				req := map[string]string{":path": "/h/", "x-user": "u"}
				if plan != "" {
					req["x-plan"] = plan
				}
				return req
			}
			runTierSteps(t, tg, []tierStep{
				{h(""), 200, `"hdr.free";r=1;`, hdrFree},
				{h(""), 200, `"hdr.free";r=0;`, hdrFree},
				{h(""), 429, `"hdr.free";r=0;`, hdrFree},
				{h("gold"), 429, `"hdr.free";r=0;`, hdrFree}, // unknown: the default
				{h("pro"), 200, `"hdr.pro.0";r=1;`, hdrPro},  // the 2 used count
				{h("pro"), 200, `"hdr.pro.0";r=0;`, hdrPro},
				{h("pro"), 429, `"hdr.pro.0";r=0;`, hdrPro},
			})

			p := func(plan string) map[string]string {
				req := map[string]string{":path": "/p/", "x-org": "o"}
				if plan != "" {
					req["x-plan"] = plan
				}
				return req
			}
			runTierSteps(t, tg, []tierStep{
				{p(""), 200, `"part.free";r=1;`, partFree},
				{p(""), 200, `"part.free";r=0;`, partFree},
				{p(""), 429, `"part.free";r=0;`, partFree},
				{p("pro"), 200, `"part.pro";r=2;`, partPro}, // a key of its own
				{p("pro"), 200, `"part.pro";r=1;`, partPro},
				{p("pro"), 200, `"part.pro";r=0;`, partPro},
				{p("pro"), 429, `"part.pro";r=0;`, partPro},
			})

			r := map[string]string{":path": "/r/", "x-user": "u"}
			runTierSteps(t, tg, []tierStep{
				{r, 200, `"red.free";r=1;`, redFree},
				{r, 200, `"red.free";r=0;`, redFree},
				{r, 429, `"red.free";r=0;`, redFree},
			})
			c.run("tier", "set", "--rule", "red", "--tier", "pro", "--", "u")
			tierStep{r, 200, `"red.pro";r=1;`, redPro}.check(t, "after tier set pro", untilAdmitted(t, tg, r))
			runTierSteps(t, tg, []tierStep{
				{r, 200, `"red.pro";r=0;`, redPro},
				{r, 429, `"red.pro";r=0;`, redPro},
			})
			showRed(t, c, nil, "pro", false, 4, 4)

			c.run("override", "set", "--rule", "red", "--ttl", "5s", "--limits",
				`[{"algorithm":"sliding_log","limit":10,"window":"1h"}]`, "--", "u")
			tierStep{r, 200, `"red.override";r=5;`, redOverride}.check(t, "after override set", untilAdmitted(t, tg, r))
			tierStep{r, 200, `"red.override";r=4;`, redOverride}.check(t, "under the override", tg.send(t, r))
			showRed(t, c, nil, "", true, 10, 6)

			// The override ends when Redis expires it: wait on Redis's
			// clock (PTTL), then the tier decides again.
			overrideKey := prefix + "{red|u}:override"
			waitFor(t, overrideKey+" to expire", func() bool {
				ttl, err := server.Client.Int("PTTL", overrideKey)
				if err != nil {
					t.Fatal(err)
				}
				if ttl == -1 {
					t.Fatalf("%s has no TTL", overrideKey)
				}
				return ttl == -2
			})
			tierStep{r, 429, `"red.pro";r=0;`, redPro}.check(t, "once the override expired", tg.send(t, r))
			// 6 are in the log, against pro's 4: show tells the whole of it
			// (used 6, remaining -2), where the RateLimit header stops at 0.
			showRed(t, c, nil, "pro", false, 4, 6)
		})
	}
}

// showRed checks what "show" says of rule red's key u: the tier or the
// override in force, its limit, what was used, the tier assigned in Redis
// (pro), and, when o is not nil, the remaining of o's RateLimit header.
func showRed(t *testing.T, c *ctl, o *outcome, tier string, override bool, limit, used int64) ctlShown {
	t.Helper()
	var s ctlShown
	c.json(&s, "show", "--rule", "red", "--", "u")
	remaining := limit - used
	if o != nil {
		remaining = remainingOf(t, *o)
	}
	if s.Tier != tier || s.OverrideApplied != override || (s.Override != nil) != override || len(s.Limits) != 1 ||
		s.Limits[0].Limit != limit || s.Limits[0].Used != used || s.Limits[0].Remaining != remaining ||
		s.AssignedTier == nil || s.AssignedTier.Value != "pro" {
		t.Fatalf("show red u: %+v; want tier %q, override %t, limit %d, used %d, remaining %d, assigned tier pro",
			s, tier, override, limit, used, remaining)
	}
	return s
}

// With the filter in cluster_mode on a Redis Cluster and ratelimitctl
// --cluster, a tier and an override set with the command decide the key's
// requests, and show agrees with the responses.
func TestCtlTiersOnRedisCluster(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3)
	prefix := redistest.Prefix(t)
	config := fmt.Sprintf(`{"redis":{"cluster":"redis","timeout":"2s","key_prefix":%q,"cluster_mode":true},"rules":%s}`, prefix, tierRules)
	tg := startCluster(t, config, cluster)
	c := newCtl(t, config, "--cluster", "--redis", strings.Join(cluster.Addrs(), ","))

	r := map[string]string{":path": "/r/", "x-user": "u"}
	runTierSteps(t, tg, []tierStep{
		{r, 200, `"red.free";r=1;`, `"red.free";q=2;w=3600`},
		{r, 200, `"red.free";r=0;`, `"red.free";q=2;w=3600`},
		{r, 429, `"red.free";r=0;`, `"red.free";q=2;w=3600`},
	})
	c.run("tier", "set", "--rule", "red", "--tier", "pro", "--", "u")
	o := untilAdmitted(t, tg, r)
	tierStep{r, 200, `"red.pro";r=1;`, `"red.pro";q=4;w=3600`}.check(t, "after tier set pro", o)
	showRed(t, c, &o, "pro", false, 4, 3)

	c.run("override", "set", "--rule", "red", "--limits", `[{"algorithm":"sliding_log","limit":20,"window":"1h"}]`, "--", "u")
	o = untilAdmitted(t, tg, r)
	tierStep{r, 200, `"red.override";r=16;`, `"red.override";q=20;w=3600`}.check(t, "after override set", o)
	s := showRed(t, c, &o, "", true, 20, 4)

	base := prefix + "{red|u}"
	for key, want := range map[string]string{base + ":tier": "pro", base + ":override": s.Override.Value} {
		if v, err := cluster.Do(key, "GET", key); err != nil || v != want {
			t.Errorf("GET %s on its master: %v %v, want %q", key, v, err, want)
		}
	}
	var l ctlListed
	c.json(&l, "list", "--rule", "red")
	if len(l.Keys) != 1 || l.Keys[0].Key != base || !l.Keys[0].Tier || !l.Keys[0].Override || len(l.Keys[0].State) != 1 || l.Cursor != "0" {
		t.Errorf("list --cluster --rule red: %+v; want %s alone, with state 0, tier and override", l, base)
	}
	if st := tg.h.RedisClusterStats("redis"); st.CrossSlot != 0 || tg.metric("ratelimit.redis.errors") != 0 {
		t.Errorf("cluster stats %+v, %d redis errors; want no CROSSSLOT and no error", st, tg.metric("ratelimit.redis.errors"))
	}
}
