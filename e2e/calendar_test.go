package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// calendarRules: a monthly limit per team in Berlin, more for enterprise,
// tiers and overrides from Redis.
const calendarRules = `[
	{"name":"team","key":[{"source":"header","name":"x-team"}],"overrides":true,
	 "tiers":{"from":"redis","default":"team","limits":{
	   "team":[{"name":"month","algorithm":"calendar","limit":2,"period":"month","time_zone":"Europe/Berlin"}],
	   "enterprise":[{"name":"month","algorithm":"calendar","limit":3,"period":"month","time_zone":"Europe/Berlin"}]}}}]`

// A monthly limit in a zone through both modules, which carry each zone's
// current rule: the 429's Retry-After and RateLimit's t are the time to the
// month's end in Berlin; ratelimitctl's tier and override keep the
// month's count.
func TestCalendarMonthEndToEnd(t *testing.T) {
	t.Parallel()
	month := algorithms.Calendar{Unit: algorithms.Month, Zone: "Europe/Berlin"}
	const policy = `"month";q=%d;w=2592000`
	for _, kind := range moduleKinds {
		t.Run(kind, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			vms, config := startVMs(t, kind, fmt.Sprintf(`{"redis":{"cluster":"redis","timeout":"2s","key_prefix":%q},"rules":%s}`, prefix, calendarRules), 1)
			tg := vms[0]
			c := newCtl(t, config, "--redis", server.Addr)
			r := map[string]string{":path": "/", "x-team": "t1"}
			runTierSteps(t, tg, []tierStep{
				{r, 200, `"month";r=1;`, fmt.Sprintf(policy, 2)},
				{r, 200, `"month";r=0;`, fmt.Sprintf(policy, 2)},
			})
			before := time.Now()
			o := tg.send(t, r)
			_, end, err := month.Bounds(time.Now())
			if err != nil {
				t.Fatal(err)
			}
			retry, _ := strconv.ParseInt(o.headers["retry-after"], 10, 64)
			lo, hi := int64(end.Sub(time.Now())/time.Second), int64(end.Sub(before)/time.Second)+1
			if o.status != 429 || retry < lo || retry > hi || !strings.HasSuffix(o.headers["ratelimit"], ";t="+o.headers["retry-after"]) {
				t.Fatalf("third: %d, Retry-After %q, RateLimit %q; want 429 and %d to %d s", o.status, o.headers["retry-after"], o.headers["ratelimit"], lo, hi)
			}
			c.run("tier", "set", "--rule", "team", "--tier", "enterprise", "--", "t1")
			tierStep{r, 200, `"month";r=0;`, fmt.Sprintf(policy, 3)}.check(t, "enterprise", untilAdmitted(t, tg, r))
			c.run("override", "set", "--rule", "team", "--limits",
				`[{"algorithm":"calendar","limit":10,"period":"month","time_zone":"Europe/Berlin"}]`, "--", "t1")
			tierStep{r, 200, `"team.override";r=6;`, `"team.override";q=10;w=2592000`}.check(t, "override", untilAdmitted(t, tg, r))
		})
	}
}
