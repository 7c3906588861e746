package filter

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
)

// A cost of 0 peeks under every algorithm, where cost.min lets a header
// ask for it: it is answered like any request and charges nothing.
func TestZeroCostPeeksEveryAlgorithm(t *testing.T) {
	for _, limit := range []string{
		`{"algorithm":"sliding_log","limit":2,"window":"1m"}`,
		`{"algorithm":"sliding_counter","limit":2,"window":"1m"}`,
		`{"algorithm":"funnel","capacity":2,"rate":1,"period":"1h"}`,
		`{"algorithm":"token_bucket","capacity":2,"refill":1,"period":"1h"}`,
	} {
		algorithm := strings.Split(limit, `"`)[3]
		t.Run(algorithm, func(t *testing.T) {
			h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"peek","key":[{"source":"header","name":"x-user"}],
				"cost":{"header":"x-cost","default":1,"min":0},"limits":[`+limit+`]}]}`)
			for i, want := range []struct {
				cost      string
				status    int
				remaining string
			}{{"0", 200, "r=2"}, {"0", 200, "r=2"}, {"1", 200, "r=1"}, {"0", 200, "r=1"}, {"1", 200, "r=0"}, {"0", 200, "r=0"}, {"1", 429, "r=0"}} {
				o := h.send("x-user=a", "x-cost="+want.cost)
				got := o.headers["ratelimit"]
				if o.status != want.status || !strings.Contains(got, want.remaining+";") {
					t.Fatalf("request %d (cost %s): %d %q %s; want %d with %s (%v)", i, want.cost, o.status, got, o.body, want.status, want.remaining, h.logs)
				}
			}
		})
	}
}

// A request cannot choose a cost that passes a limit a cost-1 request
// fails: once the limit is spent, x-cost 0 (or any value below cost.min,
// or none a number) is denied like cost 1, from the deny cache, under
// every algorithm. Before cost.min, x-cost: 0 peeked and was admitted.
func TestCostHeaderCannotPassSpentLimit(t *testing.T) {
	for _, limit := range []string{
		`{"algorithm":"sliding_log","limit":5,"window":"1h"}`,
		`{"algorithm":"sliding_counter","limit":5,"window":"1h"}`,
		`{"algorithm":"funnel","capacity":5,"rate":1,"period":"1h"}`,
		`{"algorithm":"token_bucket","capacity":5,"refill":1,"period":"1h"}`,
	} {
		algorithm := strings.Split(limit, `"`)[3]
		t.Run(algorithm, func(t *testing.T) {
			h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"spent","key":[{"source":"header","name":"x-user"}],
				"cost":{"header":"x-cost","default":1},"limits":[`+limit+`]}]}`)
			for i := range 5 {
				if o := h.send("x-user=a"); o.status != 200 {
					t.Fatalf("request %d: %d %s", i, o.status, o.body)
				}
			}
			if o := h.send("x-user=a"); o.status != 429 {
				t.Fatalf("6th request: %d, want 429", o.status)
			}
			hits := h.Counters["ratelimit.deny_cache.hits"]
			for _, cost := range []string{"0", "0", "-1", "00", "junk", "1"} {
				if o := h.send("x-user=a", "x-cost="+cost); o.status != 429 {
					t.Fatalf("x-cost %q after a 429: %d %q, want 429", cost, o.status, o.headers["ratelimit"])
				}
			}
			if got := h.Counters["ratelimit.deny_cache.hits"] - hits; got != 6 {
				t.Fatalf("%d of 6 denials from the deny cache", got)
			}
		})
	}
}

// cost.min raises a header's cost: with min 3, x-cost 1 pays 3.
func TestCostHeaderRaisedToMin(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"m","key":[{"source":"header","name":"x-user"}],
		"cost":{"header":"x-cost","default":3,"min":3},"limits":[{"algorithm":"sliding_log","limit":10,"window":"1h"}]}]}`)
	for i, want := range []struct{ cost, remaining string }{{"1", "r=7"}, {"0", "r=4"}, {"4", "r=0"}} {
		if o := h.send("x-user=a", "x-cost="+want.cost); o.status != 200 || !strings.HasPrefix(o.headers["ratelimit"], `"m";`+want.remaining+";") {
			t.Fatalf("request %d (x-cost %s): %d %q, want %s", i, want.cost, o.status, o.headers["ratelimit"], want.remaining)
		}
	}
}

// The most limits a configuration can put on one request, every rule
// matching, are decided in one call and parsed from one reply.
func TestLargestRequestIsDecided(t *testing.T) {
	var rules []string
	const perRule = 2
	for r := range config.MaxRequestLimits / perRule {
		var limits []string
		for l := range perRule {
			limits = append(limits, fmt.Sprintf(`{"name":"l%d","algorithm":"sliding_counter","limit":%d,"window":"1m"}`, l, 1+r+l))
		}
		rules = append(rules, fmt.Sprintf(`{"name":"r%d","key":[{"source":"header","name":"x-user"}],"limits":[%s]}`, r, strings.Join(limits, ",")))
	}
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[`+strings.Join(rules, ",")+`]}`)
	if o := h.send("x-user=a"); o.status != 200 || !strings.HasPrefix(o.headers["ratelimit"], `"l0";r=0;`) {
		t.Fatalf("first request: %d %q %s", o.status, o.headers["ratelimit"], o.body)
	}
	if o := h.send("x-user=a"); o.status != 429 || !strings.Contains(o.body, `"rule":"r0","limit":"l0"`) {
		t.Fatalf("second request: %d %s", o.status, o.body)
	}
	if n := h.Counters["ratelimit.redis.errors"]; n != 0 {
		t.Fatalf("%d Redis errors: %v", n, h.logs)
	}
}

// A response_cost reservation a request chooses, from a header or from
// its JSON body, cannot pass a spent limit either: a reservation of 0 is
// checked as a cost of 1 (it needs one unit left) and charged at the
// response.
func TestReserveZeroCannotPassSpentLimit(t *testing.T) {
	for _, reserve := range []string{`{"header":"x-max","default":1}`, `{"body":"max_tokens","default":1}`} {
		t.Run(strings.Split(reserve, `"`)[1], func(t *testing.T) {
			h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"llm","key":[{"source":"header","name":"x-key"}],
				"limits":[{"algorithm":"sliding_log","limit":5,"window":"1h"}],"response_cost":{"header":"x-used","reserve":`+reserve+`}}]}`)
			exchange := func(reserve string) int {
				t.Helper()
				fs := filtertest.NewStream("192.0.2.7:40000", nil)
				st := h.plugin.NewStream(fs)
				defer st.OnDone()
				st.SetBodyFollows(true)
				pairs := [][2]string{{":method", "POST"}, {":path", "/"}, {"x-key", "k"}, {"x-max", reserve}}
				if st.OnRequestHeaders(pairs) == Pause && st.WantsRequestBody() {
					st.OnRequestBody([]byte(`{"max_tokens":` + reserve + `}`))
				}
				h.Pump()
				if fs.Status != 0 {
					return fs.Status
				}
				fs.Upstream = map[string]string{":status": "200", "x-used": "1"}
				st.OnResponseHeaders(true)
				h.Pump()
				return 200
			}
			for i := range 5 {
				if got := exchange("1"); got != 200 {
					t.Fatalf("request %d: %d", i, got)
				}
			}
			for _, r := range []string{"1", "0", "0", "-1"} {
				if got := exchange(r); got != 429 {
					t.Fatalf("reserve %s after the limit was spent: %d, want 429", r, got)
				}
			}
		})
	}
}

// The largest request's rate-limit headers stay small: 8 limits with
// 64-byte names and the largest numbers each algorithm takes render a
// RateLimit-Policy and a RateLimit header of under 1 KiB each (26.8 KB
// with the 1,024 limits allowed before).
func TestLargestRequestHeadersAreBounded(t *testing.T) {
	var rules []string
	limits := []string{
		`"algorithm":"sliding_counter","limit":1125899906842,"window":"1s"`,
		`"algorithm":"sliding_counter","limit":1,"window":"312749h"`,
		`"algorithm":"funnel","capacity":200000000,"rate":1,"period":"1s"`,
		`"algorithm":"sliding_log","limit":1048576,"window":"1000h"`,
	}
	for r := range config.MaxRequestLimits {
		name := fmt.Sprintf("%0.64d", r)
		rules = append(rules, fmt.Sprintf(`{"name":"r%d","key":[{"source":"header","name":"x-user"}],"limits":[{"name":%q,%s}]}`, r, name, limits[r%len(limits)]))
	}
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"headers":"both","rules":[`+strings.Join(rules, ",")+`]}`)
	o := h.send("x-user=a")
	if o.status != 200 {
		t.Fatalf("%d %s %v", o.status, o.body, h.logs)
	}
	for _, name := range []string{"ratelimit-policy", "ratelimit"} {
		if n := len(o.headers[name]); n == 0 || n > 1024 {
			t.Errorf("%s: %d bytes, want 1 to 1024: %s", name, n, o.headers[name])
		}
		t.Logf("%s: %d bytes", name, len(o.headers[name]))
	}
}
