package filter

import (
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
)

const tieredByHeader = `{"redis":{"cluster":"redis"},"rules":[
	{"name":"api","key":[{"source":"header","name":"x-key"}],
	 "tiers":{"from":{"header":"x-plan"},"default":"free","limits":{
	   "free":[{"algorithm":"sliding_counter","limit":2,"window":"1m"}],
	   "pro":[{"algorithm":"sliding_counter","limit":4,"window":"1m"},{"algorithm":"funnel","capacity":10,"rate":10,"period":"1h","name":"pro-hourly"}]}}}]}`

// A tier from a trusted header picks the limits; an unknown tier is the
// default; tiers share a key's state, so an upgrade keeps what was used.
func TestTierFromHeader(t *testing.T) {
	h := newFakeHost(t, tieredByHeader)
	for i, want := range []int{200, 200, 429} {
		if o := h.send("x-key=k1", "x-plan=gold"); o.status != want {
			t.Fatalf("free (unknown tier) request %d: %+v", i, o)
		}
	}
	o := h.send("x-key=k1", "x-plan=pro")
	if o.status != 200 || !strings.HasPrefix(o.headers["ratelimit"], `"api.pro.0";r=1;`) ||
		o.headers["ratelimit-policy"] != `"api.pro.0";q=4;w=60, "pro-hourly";q=10;w=3600` {
		t.Fatalf("pro keeps the 2 used of its 4: %+v", o)
	}
	if o := h.send("x-key=k1", "x-plan=pro"); o.status != 200 {
		t.Fatalf("pro, fourth: %+v", o)
	}
	if o := h.send("x-key=k1", "x-plan=pro"); o.status != 429 || !strings.Contains(o.body, `"limit":"api.pro.0"`) {
		t.Fatalf("pro, fifth: %+v", o)
	}
	// The denial cached for pro does not answer free, nor free's pro.
	hits := h.Counters["ratelimit.deny_cache.hits"]
	if o := h.send("x-key=k1"); o.status != 429 || h.Counters["ratelimit.deny_cache.hits"] != hits {
		t.Fatalf("free after pro's denial is Redis's to decide: %+v", o)
	}
}

const tieredInRedis = `{"redis":{"cluster":"redis"},"rules":[
	{"name":"api","key":[{"source":"header","name":"x-key"}],"overrides":true,
	 "tiers":{"from":"redis","default":"free","limits":{
	   "free":[{"algorithm":"sliding_log","limit":1,"window":"1m"}],
	   "pro":[{"algorithm":"sliding_log","limit":3,"window":"1m"}]}}}]}`

// An operator's tier and override, read in the deciding call: the
// override wins while it lives, then the tier, then the default.
func TestTierAndOverrideFromRedis(t *testing.T) {
	h := newFakeHost(t, tieredInRedis)
	h.plugin.top().denyCache = nil // this test is about Redis's picks
	cfg := h.plugin.cfg
	rule := &cfg.Rules[0]
	base, err := keyspace.RuleKey(cfg, rule, []string{"k1"})
	if err != nil {
		t.Fatal(err)
	}
	if o := h.send("x-key=k1"); o.status != 200 || o.headers["ratelimit-policy"] != `"api.free";q=1;w=60` {
		t.Fatalf("free: %+v", o)
	}
	if o := h.send("x-key=k1"); o.status != 429 {
		t.Fatalf("free, second: %+v", o)
	}
	if _, err := server.Do("SET", keyspace.TierKey(base), "pro"); err != nil {
		t.Fatal(err)
	}
	o := h.send("x-key=k1")
	if o.status != 200 || o.headers["ratelimit"] != `"api.pro";r=1;t=60` {
		t.Fatalf("pro: %+v", o)
	}
	v, err := config.ParseOverride(rule, []byte(`[{"algorithm":"sliding_log","limit":5000,"window":"1m"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := server.Do("SET", keyspace.OverrideKey(base), v, "PX", "60000"); err != nil {
		t.Fatal(err)
	}
	o = h.send("x-key=k1")
	if o.status != 200 || o.headers["ratelimit"] != `"api.override";r=4997;t=60` || o.headers["ratelimit-policy"] != `"api.override";q=5000;w=60` {
		t.Fatalf("override: %+v", o)
	}
	if _, err := server.Do("DEL", keyspace.OverrideKey(base), keyspace.TierKey(base)); err != nil {
		t.Fatal(err)
	}
	if o := h.send("x-key=k1"); o.status != 429 || !strings.Contains(o.body, `"limit":"api.free"`) {
		t.Fatalf("back to free: %+v", o)
	}
}

func TestParseOverrideErrors(t *testing.T) {
	cfg, err := config.Parse([]byte(tieredInRedis))
	if err != nil {
		t.Fatal(err)
	}
	rule := &cfg.Rules[0]
	for limits, want := range map[string]string{
		`[{"algorithm":"funnel","capacity":5,"rate":1,"period":"1s"}]`:                                              "limits[0]: must be a sliding_log, as limit 0 of tier free",
		`[{"algorithm":"sliding_log","limit":5,"window":"1m"},{"algorithm":"sliding_log","limit":5,"window":"1h"}]`: "limits: at most 1 limits",
		`[{"algorithm":"sliding_log","limit":0,"window":"1m"}]`:                                                     "limits[0].limit: must be >= 1",
		`{`: "not valid JSON",
	} {
		if _, err := config.ParseOverride(rule, []byte(limits)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", limits, err, want)
		}
	}
}

// Peek reads a key as a request would meet it, charging nothing.
func TestPeekReadsWithoutCharging(t *testing.T) {
	h := newFakeHost(t, tieredInRedis)
	cfg := h.plugin.cfg
	rule := &cfg.Rules[0]
	base, _ := keyspace.RuleKey(cfg, rule, []string{"k2"})
	if _, err := server.Do("SET", keyspace.TierKey(base), "pro"); err != nil {
		t.Fatal(err)
	}
	h.send("x-key=k2")
	pk, err := keyspace.NewPeek(cfg, rule, base, "")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		ks, err := runPeek(t, pk)
		if err != nil {
			t.Fatal(err)
		}
		if ks.Tier != "pro" || ks.Override || len(ks.Limits) != 1 || ks.Limits[0].Used != 1 || ks.Limits[0].Remaining != 2 || ks.Limits[0].Name != "api.pro" {
			t.Fatalf("peek: %+v", ks)
		}
	}
}

// runPeek sends pk's read to the real Redis and decodes its reply.
func runPeek(t *testing.T, pk *keyspace.Peek) (keyspace.KeyState, error) {
	t.Helper()
	v, err := server.Do(pk.Args(algorithms.FCall)...)
	if err != nil {
		t.Fatal(err)
	}
	var ints []int64
	for _, x := range v.([]any) {
		ints = append(ints, x.(int64))
	}
	return pk.Decode(ints)
}
