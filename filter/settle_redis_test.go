package filter

import (
	"strconv"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
)

// costLimits are a response_cost rule's limit, per algorithm, each of 100
// units an hour: a funnel's unit leaks every 36 s, so what it holds reads
// back exactly for a test that takes less than 18 s.
var costLimits = map[string]string{
	"sliding_log": `{"algorithm":"sliding_log","limit":100,"window":"1h"}`,
	"funnel":      `{"algorithm":"funnel","capacity":100,"rate":100,"period":"1h"}`,
}

// costConfig is a rule "llm" keyed on x-key under limit, which reserves
// x-max (10 by default) and charges the response's x-used.
func costConfig(limit, extra string) string {
	return `{"redis":{"cluster":"redis"},` + extra + `"rules":[{"name":"llm","key":[{"source":"header","name":"x-key"}],
		"limits":[` + limit + `],"response_cost":{"header":"x-used","reserve":{"header":"x-max","default":10}}}]}`
}

// costStream is a request of a response_cost rule, admitted or not.
type costStream struct {
	fs *fakeStream
	st *Stream
}

// admit sends a request reserving reserve and pumps its call.
func (h *fakeHost) admit(reserve int64) costStream {
	h.t.Helper()
	c := costStream{fs: filtertest.NewStream("192.0.2.7:40000", nil)}
	c.st = h.plugin.NewStream(c.fs)
	pairs := [][2]string{{":method", "POST"}, {":path", "/"}, {"x-key", "k"}, {"x-max", strconv.FormatInt(reserve, 10)}}
	if c.st.OnRequestHeaders(pairs) == Pause && c.fs.Status == 0 {
		h.Pump()
	}
	if c.fs.Status != 0 || c.fs.Resumed != 1 {
		h.t.Fatalf("reserve %d: status %d, resumed %d, body %s", reserve, c.fs.Status, c.fs.Resumed, c.fs.Body)
	}
	return c
}

// finish answers c with a bodiless response reporting used, ends the
// stream and pumps its settle.
func (h *fakeHost) finish(c costStream, used int64) {
	h.t.Helper()
	c.fs.Upstream = map[string]string{":status": "200", "x-used": strconv.FormatInt(used, 10)}
	c.st.OnResponseHeaders(true)
	c.st.OnDone()
	h.Pump()
}

// units is what the key "{llm|k}:0" holds in Redis under algorithm.
func (h *fakeHost) units(algorithm string) int64 {
	h.t.Helper()
	if algorithm == "sliding_log" {
		return h.logCount("{llm|k}:0")
	}
	return h.funnelUnits("{llm|k}:0", time.Hour/100)
}

// funnelUnits is the units a funnel key holds: its TAT's lead over Redis's
// clock, in emission intervals t, rounded to the nearest.
func (h *fakeHost) funnelUnits(key string, t time.Duration) int64 {
	h.t.Helper()
	v, err := server.Do("GET", h.plugin.cfg.Redis.Prefix+key)
	if err != nil {
		h.t.Fatal(err)
	}
	if v == nil {
		return 0 // an empty funnel has no key
	}
	tat, err := strconv.ParseInt(v.(string), 10, 64)
	if err != nil {
		h.t.Fatal(err)
	}
	now, err := server.Do("TIME")
	if err != nil {
		h.t.Fatal(err)
	}
	sec, _ := strconv.ParseInt(now.([]any)[0].(string), 10, 64)
	usec, _ := strconv.ParseInt(now.([]any)[1].(string), 10, 64)
	lead, us := tat-(sec*1e6+usec), t.Microseconds()
	if lead <= 0 {
		return 0
	}
	return (lead + us/2) / us
}

// An admission on Redis holds its reservation; the settle at the
// response's end leaves Redis holding exactly the real cost: a refund
// when less was used, a charge when more, nothing when the estimate held.
func TestSettleOnRedisChargesTheRealCost(t *testing.T) {
	steps := []struct{ reserve, used int64 }{
		{40, 10}, // 30 refunded
		{5, 25},  // 20 more charged
		{7, 7},   // no settle
		{20, 0},  // all 20 refunded
	}
	for algorithm, limit := range costLimits {
		t.Run(algorithm, func(t *testing.T) {
			h := newFakeHost(t, costConfig(limit, `"headers":"both",`))
			var total int64
			for _, s := range steps {
				c := h.admit(s.reserve)
				if got := h.units(algorithm); got != total+s.reserve {
					t.Fatalf("reserve %d after %d: Redis holds %d, want %d", s.reserve, total, got, total+s.reserve)
				}
				calls := h.Calls
				h.finish(c, s.used)
				total += s.used
				if got := h.units(algorithm); got != total {
					t.Fatalf("reserve %d, used %d: Redis holds %d after the settle, want %d", s.reserve, s.used, got, total)
				}
				if settled := h.Calls - calls; (settled == 0) != (s.used == s.reserve) {
					t.Fatalf("reserve %d, used %d: %d settle calls", s.reserve, s.used, settled)
				}
			}
			m := h.Counters
			if m["ratelimit.rule.llm.units_refunded"] != 50 || m["ratelimit.rule.llm.units_charged"] != 20 || m["ratelimit.settle.errors"] != 0 {
				t.Fatalf("refunded %d (want 50), charged %d (want 20), settle errors %d", m["ratelimit.rule.llm.units_refunded"],
					m["ratelimit.rule.llm.units_charged"], m["ratelimit.settle.errors"])
			}
		})
	}
}
