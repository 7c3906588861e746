package filter

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
)

// untilMonthEnd bounds, in whole seconds, the time from a request sent
// between before and after to the end of the month in Europe/Berlin: a
// header's ceiling of it lies within.
func untilMonthEnd(t *testing.T, before, after time.Time) (lo, hi int64) {
	t.Helper()
	_, end, err := algorithms.Calendar{Unit: algorithms.Month, Zone: "Europe/Berlin"}.Bounds(after)
	if err != nil {
		t.Fatal(err)
	}
	return int64(end.Sub(after) / time.Second), int64(end.Sub(before)/time.Second) + 1
}

// headerSeconds reads the seconds of a header, or of ";t=" in RateLimit.
func headerSeconds(t *testing.T, v string) int64 {
	t.Helper()
	if i := strings.LastIndex(v, ";t="); i >= 0 {
		v = v[i+3:]
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("%q: %v", v, err)
	}
	return n
}

const calendarTiers = `{"redis":{"cluster":"redis"},"rules":[
	{"name":"team","key":[{"source":"header","name":"x-team"}],"overrides":true,
	 "tiers":{"from":"redis","default":"team","limits":{
	   "team":[{"algorithm":"calendar","limit":2,"period":"month","time_zone":"Europe/Berlin"}],
	   "enterprise":[{"algorithm":"calendar","limit":5,"period":"month","time_zone":"Europe/Berlin"}]}}}]}`

// A monthly limit per team, more for enterprise, and an operator's
// override: RateLimit and Retry-After give the time to the month's end in
// the zone; the tiers and the override share the month's count.
func TestCalendarMonthTiersAndOverride(t *testing.T) {
	h := newFakeHost(t, calendarTiers)
	h.plugin.top().denyCache = nil // this test is about Redis's picks
	cfg := h.plugin.cfg
	rule := &cfg.Rules[0]
	base, err := keyspace.RuleKey(cfg, rule, []string{"t1"})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	o := h.send("x-team=t1")
	lo, hi := untilMonthEnd(t, before, time.Now())
	if o.status != 200 || o.headers["ratelimit-policy"] != `"team.team";q=2;w=2592000` || !strings.HasPrefix(o.headers["ratelimit"], `"team.team";r=1;`) {
		t.Fatalf("team: %+v", o)
	}
	if s := headerSeconds(t, o.headers["ratelimit"]); s < lo || s > hi {
		t.Fatalf("resets in %d s, want %d to %d", s, lo, hi)
	}
	h.send("x-team=t1")
	before = time.Now()
	o = h.send("x-team=t1")
	lo, hi = untilMonthEnd(t, before, time.Now())
	if o.status != 429 {
		t.Fatalf("team, third: %+v", o)
	}
	if s := headerSeconds(t, o.headers["retry-after"]); s < lo || s > hi {
		t.Fatalf("retry after %d s, want %d to %d", s, lo, hi)
	}
	if _, err := server.Do("SET", keyspace.TierKey(base), "enterprise"); err != nil {
		t.Fatal(err)
	}
	if o := h.send("x-team=t1"); o.status != 200 || !strings.HasPrefix(o.headers["ratelimit"], `"team.enterprise";r=2;`) {
		t.Fatalf("enterprise keeps the month's 2 used: %+v", o)
	}
	v, err := config.ParseOverride(rule, []byte(`[{"algorithm":"calendar","limit":500,"period":"month","time_zone":"Europe/Berlin"}]`))
	if err != nil || v != "p:500:4" {
		t.Fatalf("override %q, %v", v, err)
	}
	if _, err := server.Do("SET", keyspace.OverrideKey(base), v); err != nil {
		t.Fatal(err)
	}
	before = time.Now()
	o = h.send("x-team=t1")
	lo, hi = untilMonthEnd(t, before, time.Now())
	if o.status != 200 || !strings.HasPrefix(o.headers["ratelimit"], `"team.override";r=496;`) || o.headers["ratelimit-policy"] != `"team.override";q=500;w=2592000` {
		t.Fatalf("override: %+v", o)
	}
	if s := headerSeconds(t, o.headers["ratelimit"]); s < lo || s > hi {
		t.Fatalf("the override resets in %d s, want %d to %d", s, lo, hi)
	}
	// ratelimitctl show reads the override's month as a request meets it.
	pk, err := keyspace.NewPeek(cfg, rule, base, "")
	if err != nil {
		t.Fatal(err)
	}
	before = time.Now()
	ks, err := runPeek(t, pk)
	lo, hi = untilMonthEnd(t, before, time.Now())
	if err != nil || !ks.Override || len(ks.Limits) != 1 || ks.Limits[0].Used != 4 || ks.Limits[0].Remaining != 496 ||
		ks.Limits[0].Algorithm != "calendar" || ks.Limits[0].Decided.Calendar.Zone != "Europe/Berlin" {
		t.Fatalf("peek: %+v, %v", ks, err)
	}
	if s := int64(ks.Limits[0].Reset / time.Second); s < lo-1 || s > hi {
		t.Fatalf("peek: resets in %v, want %d to %d s", ks.Limits[0].Reset, lo, hi)
	}
	for limits, want := range map[string]string{
		`[{"algorithm":"calendar","limit":500,"period":"month","time_zone":"UTC"}]`:                 "must have the period, time_zone and week_starts",
		`[{"algorithm":"calendar","limit":500,"period":"week","time_zone":"Europe/Berlin"}]`:        "must have the period, time_zone and week_starts",
		`[{"algorithm":"sliding_log","limit":500,"window":"1h"}]`:                                   "must be a calendar",
		`[{"algorithm":"calendar","limit":500,"period":"month","time_zone":"Europe/Berlin","x":1}]`: "unknown field",
	} {
		if _, err := config.ParseOverride(rule, []byte(limits)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", limits, err, want)
		}
	}
}

// A response cost settles in the month it reserved in: Redis holds the
// real cost, with the month's end.
func TestCalendarSettlesTheRealCost(t *testing.T) {
	h := newFakeHost(t, costConfig(`{"algorithm":"calendar","limit":100,"period":"month","time_zone":"Europe/Berlin"}`, ""))
	for _, step := range []struct{ reserve, used, want int64 }{{40, 10, 10}, {5, 25, 35}, {10, 10, 45}} {
		h.finish(h.admit(step.reserve), step.used)
		v, err := server.Do("HMGET", h.plugin.cfg.Redis.Prefix+"{llm|k}:0", "e", "c")
		if err != nil {
			t.Fatal(err)
		}
		got := v.([]any)
		_, end, _ := algorithms.Calendar{Unit: algorithms.Month, Zone: "Europe/Berlin"}.Bounds(time.Now())
		if got[1] != strconv.FormatInt(step.want, 10) || got[0] != strconv.FormatInt(end.UnixMicro(), 10) {
			t.Fatalf("after reserving %d and using %d: %v, want %d units to %d", step.reserve, step.used, got, step.want, end.UnixMicro())
		}
	}
}

// Under failure_mode local, with Redis down, the VM decides a rule's other
// limits and leaves its calendar limit alone: the period is Redis's.
func TestCalendarNotDecidedLocally(t *testing.T) {
	h := newFakeHost(t, localConfig("1", "", `[{"name":"r","key":[{"source":"header","name":"x-user"}],
		"limits":[{"name":"month","algorithm":"calendar","limit":1,"period":"month"},
		          {"name":"minute","algorithm":"sliding_log","limit":3,"window":"1m"}]}]`))
	h.Clock = time.Now()
	h.Down = true
	for i, want := range []int{200, 200, 200, 429} {
		if o := h.send("x-user=a"); o.status != want || want == 429 && !strings.Contains(o.body, `"limit":"minute"`) {
			t.Fatalf("request %d: %+v, want %d from the minute's limit", i, o, want)
		}
	}
}
