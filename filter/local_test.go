package filter

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/internal/istiotags"

	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
)

// localConfig is a configuration under failure_mode: local; extra holds
// more top-level fields, each followed by a comma.
func localConfig(share, extra, rules string) string {
	return `{"redis":{"cluster":"redis"},"headers":"both",` + extra +
		`"failure_mode":"local","local_fallback":{"share":` + share + `},"rules":` + rules + `}`
}

const localPerUser = `[{"name":"per-user","key":[{"source":"header","name":"x-user"}],
	"limits":[{"algorithm":"sliding_log","limit":4,"window":"1m"}]}]`

// With Redis down, the VM decides alone with its share of the limit, and
// answers as Redis would: the same headers and body; then, once a call
// succeeds, Redis decides again, from its own state.
func TestLocalDecidesWhileRedisIsDown(t *testing.T) {
	h := newFakeHost(t, localConfig("0.5", `"circuit_breaker":{"failures":2,"backoff":"1s"},`, localPerUser))
	h.Clock = time.Now()
	h.Down = true
	for i := 1; i >= 0; i-- {
		o := h.send("x-user=a")
		if o.status != 200 || o.headers["ratelimit"] != fmt.Sprintf(`"per-user";r=%d;t=60`, i) ||
			o.headers["ratelimit-policy"] != `"per-user";q=4;w=60` || o.headers["x-ratelimit-limit"] != "4" {
			t.Fatalf("local admission, %d left: %+v", i, o)
		}
	}
	o := h.send("x-user=a") // the breaker is open: no call is sent
	if o.status != 429 || o.headers["retry-after"] != "60" || o.headers["ratelimit"] != `"per-user";r=0;t=60` ||
		o.body != `{"error":"rate_limited","rule":"per-user","limit":"per-user","retry_after":60}`+"\n" {
		t.Fatalf("local denial: %+v", o)
	}
	if o := h.send("x-user=b"); o.status != 200 {
		t.Fatalf("another key has its own share: %+v", o)
	}
	want := map[string]uint64{"ratelimit.failure_mode.local_allowed": 3, "ratelimit.failure_mode.local_denied": 1,
		"ratelimit.rule.per-user.allowed": 3, "ratelimit.rule.per-user.denied": 1, "ratelimit.failure_mode.allowed": 0,
		"ratelimit.circuit_breaker.skipped": 2, "ratelimit.deny_cache.hits": 0}
	for name, n := range want {
		if h.Counters[name] != n {
			t.Errorf("%s = %d, want %d", name, h.Counters[name], n)
		}
	}
	h.Down = false
	h.Clock = h.Clock.Add(time.Second)
	if o := h.send("x-user=a"); o.status != 200 || o.headers["ratelimit"] != `"per-user";r=3;t=60` {
		t.Fatalf("Redis back: its own decision, not the VM's: %+v", o)
	}
	if h.Counters["ratelimit.failure_mode.local_allowed"] != 3 || h.plugin.top().fallback.size() != 2 {
		t.Fatalf("after recovery: local allowed %d, states %d", h.Counters["ratelimit.failure_mode.local_allowed"], h.plugin.top().fallback.size())
	}
	h.Clock = h.Clock.Add(time.Minute)
	h.plugin.OnTick()
	if n := h.plugin.top().fallback.size(); n != 0 {
		t.Fatalf("%d local states kept after they drained", n)
	}
}

// A local denial is not cached: the deny cache only repeats Redis.
func TestLocalDenialIsNotCached(t *testing.T) {
	h := newFakeHost(t, localConfig("0.25", `"circuit_breaker":{"failures":0},`, localPerUser))
	h.Down = true
	if o := h.send("x-user=a"); o.status != 200 {
		t.Fatalf("first: %+v", o)
	}
	if o := h.send("x-user=a"); o.status != 429 {
		t.Fatalf("second, beyond the share of 1: %+v", o)
	}
	h.Down = false
	calls := h.Calls
	if o := h.send("x-user=a"); o.status != 200 || h.Calls != calls+1 {
		t.Fatalf("Redis back decides at once: %+v (calls %d)", o, h.Calls-calls)
	}
}

// Funnels and counters scale too; a cost above a limit's local capacity
// is refused as cost_exceeds_capacity while the VM decides.
func TestLocalFunnelCounterAndCost(t *testing.T) {
	h := newFakeHost(t, localConfig("0.25", "", `[{"name":"api","key":[{"source":"header","name":"x-user"}],
		"cost":{"header":"x-cost","default":1},
		"limits":[{"name":"burst","algorithm":"funnel","capacity":8,"rate":4,"period":"1h"},
		          {"name":"minute","algorithm":"sliding_counter","limit":12,"window":"1m"}]}]`))
	h.Clock = time.Now()
	h.Down = true
	if o := h.send("x-user=a", "x-cost=3"); o.status != 429 || o.body != `{"error":"cost_exceeds_capacity","rule":"api"}`+"\n" {
		t.Fatalf("cost 3 above the local capacity of 2: %+v", o)
	}
	for i, want := range []int{200, 200, 429} {
		if o := h.send("x-user=a"); o.status != want {
			t.Fatalf("request %d against capacity ceil(0.25 × 8) = 2: %+v", i, o)
		}
	}
	if o := h.send("x-user=b", "x-cost=2"); o.status != 200 || !strings.HasPrefix(o.headers["ratelimit"], `"burst";r=0;`) {
		t.Fatalf("cost 2 fits: %+v", o)
	}
	if h.Counters["ratelimit.rule.api.denied"] != 2 || h.Counters["ratelimit.failure_mode.local_denied"] != 2 {
		t.Fatalf("metrics: %v", h.Counters)
	}
}

// Tiers from a header keep the request's tier; tiers from Redis and
// overrides, which only Redis knows, give the default tier.
func TestLocalTiers(t *testing.T) {
	h := newFakeHost(t, strings.Replace(tieredByHeader, `"rules"`, `"failure_mode":"local","local_fallback":{"share":0.5},"rules"`, 1))
	h.Down = true
	for i, want := range []int{200, 200, 429} {
		if o := h.send("x-key=k1", "x-plan=pro"); o.status != want || want == 200 && !strings.HasPrefix(o.headers["ratelimit"], `"api.pro.0";`) {
			t.Fatalf("pro request %d, 2 of 4 locally: %+v", i, o)
		}
	}
	if o := h.send("x-key=k2"); o.status != 200 || o.headers["ratelimit-policy"] != `"api.free";q=2;w=60` {
		t.Fatalf("free: %+v", o)
	}
	if o := h.send("x-key=k2"); o.status != 429 {
		t.Fatalf("free, 1 of 2 locally: %+v", o)
	}

	r := newFakeHost(t, strings.Replace(tieredInRedis, `"rules"`, `"failure_mode":"local","local_fallback":{"share":1},"rules"`, 1))
	r.Down = true
	if o := r.send("x-key=k1"); o.status != 200 || o.headers["ratelimit-policy"] != `"api.free";q=1;w=60` ||
		!strings.HasPrefix(o.headers["ratelimit"], `"api.free";r=0;`) {
		t.Fatalf("tier from Redis, the default locally: %+v", o)
	}
	if o := r.send("x-key=k1"); o.status != 429 || !strings.Contains(o.body, `"limit":"api.free"`) {
		t.Fatalf("default tier's limit: %+v", o)
	}
}

// At most max_keys limit states. A new key pushes out a state that still
// admits, the least used first (counted when it still mattered); a state
// that denies stays, and when all do, a new key is decided as a fresh one
// and not held. States are swept once they drain.
func TestLocalStateIsBounded(t *testing.T) {
	h := newFakeHost(t, localBounded(2, localLogOf(4)))
	h.Clock = time.Now()
	h.Down = true
	for _, u := range []string{"a", "a", "a", "b", "c"} { // a: 3 of 4 used; b and c: 1
		if o := h.send("x-user=" + u); o.status != 200 {
			t.Fatalf("%s: %+v", u, o)
		}
	}
	if h.plugin.top().fallback.size() != 2 || h.Counters["ratelimit.failure_mode.local_evicted"] != 1 {
		t.Fatalf("states %d, evicted %d", h.plugin.top().fallback.size(), h.Counters["ratelimit.failure_mode.local_evicted"])
	}
	if o := h.send("x-user=a", "x-cost=2"); o.status != 429 {
		t.Fatalf("a, the most used, is still held: %+v", o)
	}
	if o := h.send("x-user=b", "x-cost=4"); o.status != 200 {
		t.Fatalf("b, the least used, was pushed out (c came after it), so admitted afresh: %+v", o)
	}
	// a denies cost 2 and b denies: d finds no room, and is not held.
	if o := h.send("x-user=d", "x-cost=4"); o.status != 200 || h.Counters["ratelimit.failure_mode.local_unheld"] != 1 {
		t.Fatalf("d: %+v, unheld %d", o, h.Counters["ratelimit.failure_mode.local_unheld"])
	}
	if o := h.send("x-user=d", "x-cost=4"); o.status != 200 || h.plugin.top().fallback.size() != 2 {
		t.Fatalf("d again, decided afresh: %+v, states %d", o, h.plugin.top().fallback.size())
	}
	h.Clock = h.Clock.Add(30 * time.Second)
	h.plugin.OnTick()
	if h.plugin.top().fallback.size() != 2 {
		t.Fatal("states that still matter were swept")
	}
	h.Clock = h.Clock.Add(time.Minute)
	h.plugin.OnTick()
	if h.plugin.top().fallback.size() != 0 || h.Counters["ratelimit.failure_mode.local_states"] != 0 {
		t.Fatalf("%d states kept once they drained (gauge %d)", h.plugin.top().fallback.size(), h.Counters["ratelimit.failure_mode.local_states"])
	}
	if o := h.send("x-user=a", "x-cost=4"); o.status != 200 {
		t.Fatalf("a after its window: %+v", o)
	}
}

// A response_cost rule reserves locally and settles locally: nothing goes
// to Redis at the response's end.
func TestLocalResponseCostSettlesInTheVM(t *testing.T) {
	h := newFakeHost(t, localConfig("0.5", `"circuit_breaker":{"failures":0},`, `[{"name":"llm","key":[{"source":"header","name":"x-key"}],
		"limits":[{"algorithm":"sliding_counter","limit":100,"window":"1h"}],
		"response_cost":{"header":"x-used","reserve":{"header":"x-max","default":10}}}]`))
	h.Clock = time.Now()
	h.Down = true
	exchange := func(maxTokens, used string) outcome {
		t.Helper()
		fs := filtertest.NewStream("192.0.2.7:40000", nil)
		pairs := [][2]string{{":method", "POST"}, {":path", "/"}, {"x-key", "k"}, {"x-max", maxTokens}}
		o, err := filtertest.Exchange(h.Host, fs, h.plugin.NewStream(fs), Pause, pairs,
			&filtertest.Response{Headers: map[string]string{":status": "200", "x-used": used}})
		if err != nil {
			t.Fatal(err)
		}
		return outcome{status: o.Status, headers: o.Headers, body: o.Body}
	}
	calls := h.Calls
	if o := exchange("40", "10"); o.status != 200 || !strings.HasPrefix(o.headers["ratelimit"], `"llm";r=10;`) {
		t.Fatalf("reserve 40 of 50: %+v", o)
	}
	if o := exchange("40", "40"); o.status != 200 || !strings.HasPrefix(o.headers["ratelimit"], `"llm";r=0;`) {
		t.Fatalf("the 30 refunded: 40 more fit: %+v", o)
	}
	if o := exchange("1", "1"); o.status != 429 {
		t.Fatalf("50 of 50 used: %+v", o)
	}
	m := h.Counters
	if h.Calls != calls+3 || m["ratelimit.rule.llm.units_refunded"] != 30 || m["ratelimit.settle.errors"] != 0 {
		t.Fatalf("calls %d (want only the 3 decisions), refunded %d, settle errors %d",
			h.Calls-calls, m["ratelimit.rule.llm.units_refunded"], m["ratelimit.settle.errors"])
	}
}

// The local fallback's metrics keep their names under Istio's tags.
func TestLocalMetricNamesSurviveIstioTags(t *testing.T) {
	cfg, err := config.Parse([]byte(localConfig("0.5", "", localPerUser)))
	if err != nil {
		t.Fatal(err)
	}
	m := &metricNames{}
	newLocalLimiter(cfg, m)
	if len(m.defined) != 5 {
		t.Fatalf("defined %q", m.defined)
	}
	for _, name := range m.defined {
		if tag := istiotags.Match("wasmcustom." + name); tag != "" || !strings.HasPrefix(name, "ratelimit.failure_mode.local_") {
			t.Errorf("%s: tag %q", name, tag)
		}
	}
}

// A concurrency limit is Redis's to count: decided locally, the rule's
// rate limits apply and its concurrency limit does not.
func TestLocalSkipsConcurrencyLimits(t *testing.T) {
	h := newFakeHost(t, localConfig("1", "", `[{"name":"slots","key":[{"source":"header","name":"x-user"}],
		"limits":[{"algorithm":"concurrency","limit":1,"max_duration":"1m"},{"algorithm":"sliding_log","limit":3,"window":"1m"}]}]`))
	h.Clock = time.Now()
	h.Down = true
	pairs := [][2]string{{":method", "GET"}, {":path", "/"}, {":authority", "example.com"}, {"x-user", "a"}}
	var held []*Stream // three in flight at once, over a concurrency limit of 1
	for i := range 3 {
		fs := filtertest.NewStream("192.0.2.7:40000", nil)
		st := h.plugin.NewStream(fs)
		if a := st.OnRequestHeaders(pairs); a != Continue {
			h.Pump()
			if fs.Resumed != 1 || fs.Status != 0 {
				t.Fatalf("request %d in flight: %+v, want admitted", i, fs)
			}
		}
		held = append(held, st)
	}
	if o := h.send("x-user=a"); o.status != 429 {
		t.Fatalf("the fourth, over the sliding log's 3: %+v", o)
	}
	for _, st := range held {
		st.OnDone()
	}
	if h.Counters["ratelimit.failure_mode.local_allowed"] != 3 || h.Counters["ratelimit.failure_mode.local_denied"] != 1 {
		t.Fatalf("metrics: %v", h.Counters)
	}
}
