package filter

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
)

const perUser = `{"redis":{"cluster":"redis"},"headers":"both","rules":[{"name":"per-user",
	"key":[{"source":"header","name":"x-user"}],
	"limits":[{"algorithm":"sliding_log","limit":3,"window":"1m"}]}]}`

func TestAllowedUpToLimitThenRejected(t *testing.T) {
	h := newFakeHost(t, perUser)
	for i := 2; i >= 0; i-- {
		o := h.send("x-user=alice")
		if o.status != 200 || o.headers["ratelimit"] != fmt.Sprintf(`"per-user";r=%d;t=60`, i) ||
			o.headers["ratelimit-policy"] != `"per-user";q=3;w=60` || o.headers["x-ratelimit-remaining"] != fmt.Sprint(i) {
			t.Fatalf("request %d: %+v", 3-i, o)
		}
	}
	o := h.send("x-user=alice")
	if o.status != 429 || o.headers["retry-after"] != "60" || o.headers["ratelimit"] != `"per-user";r=0;t=60` ||
		o.headers["x-ratelimit-limit"] != "3" || o.headers["x-ratelimit-reset"] != "60" ||
		o.body != `{"error":"rate_limited","rule":"per-user","limit":"per-user","retry_after":60}`+"\n" {
		t.Fatalf("4th request: %+v", o)
	}
	if o := h.send("x-user=bob"); o.status != 200 {
		t.Fatalf("bob shares alice's key: %+v", o)
	}
	if h.Counters["ratelimit.rule.per-user.allowed"] != 4 || h.Counters["ratelimit.rule.per-user.denied"] != 1 {
		t.Fatalf("metrics: %v", h.Counters)
	}
	if o := h.send(); o.status != 200 || len(o.headers) != 0 {
		t.Fatalf("request without the key header is skipped: %+v", o)
	}
	if h.plugin.Pending() != 0 {
		t.Fatal("calls left pending")
	}
}

func TestSeveralLimitsOneRule(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"api","key":[{"source":"client_ip"}],
		"limits":[{"name":"second","algorithm":"sliding_log","limit":1,"window":"1s"},
		          {"name":"minute","algorithm":"sliding_log","limit":20,"window":"1m"}]}]}`)
	o := h.send()
	if o.status != 200 || o.headers["ratelimit-policy"] != `"second";q=1;w=1, "minute";q=20;w=60` || o.headers["ratelimit"] != `"second";r=0;t=1` {
		t.Fatalf("first: %+v", o)
	}
	o = h.send()
	if o.status != 429 || !strings.Contains(o.body, `"limit":"second"`) || o.headers["retry-after"] != "1" {
		t.Fatalf("second within a second: %+v", o)
	}
	if n, _ := server.Do("ZCARD", h.plugin.cfg.Redis.Prefix+"{api|192.0.2.7}:1"); n != int64(1) {
		t.Fatalf("the minute limit counted a denied request: %v", n)
	}
}

func TestShadowRuleNeverDenies(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"trial","shadow":true,"key":[{"source":"constant","value":"all"}],
		"limits":[{"algorithm":"funnel","capacity":1,"rate":1,"period":"1m"}]}]}`)
	for range 3 {
		if o := h.send(); o.status != 200 || len(o.headers) != 0 {
			t.Fatalf("shadow rule answered: %+v", o)
		}
	}
	if h.Counters["ratelimit.rule.trial.allowed"] != 1 || h.Counters["ratelimit.rule.trial.would_deny"] != 2 {
		t.Fatalf("metrics: %v", h.Counters)
	}
}

func TestManualBlock(t *testing.T) {
	h := newFakeHost(t, perUser)
	if _, err := server.Do("SET", h.plugin.cfg.Redis.Prefix+"{per-user|mallory}:block", "1", "EX", "120"); err != nil {
		t.Fatal(err)
	}
	o := h.send("x-user=mallory")
	if o.status != 429 || o.headers["retry-after"] != "120" || o.body != `{"error":"blocked","rule":"per-user","retry_after":120}`+"\n" {
		t.Fatalf("blocked: %+v", o)
	}
	if h.Counters["ratelimit.rule.per-user.blocked"] != 1 {
		t.Fatalf("metrics: %v", h.Counters)
	}
	if o := h.send("x-user=alice"); o.status != 200 {
		t.Fatalf("alice: %+v", o)
	}
}

func TestFailureModes(t *testing.T) {
	for _, mode := range []string{"allow", "deny"} {
		t.Run(mode, func(t *testing.T) {
			h := newFakeHost(t, strings.Replace(perUser, `"headers":"both"`, `"failure_mode":"`+mode+`"`, 1))
			want := 200
			if mode == "deny" {
				want = 503
			}
			h.Down = true
			if o := h.send("x-user=a"); o.status != want {
				t.Fatalf("redis down: %+v", o)
			}
			h.Down = false
			h.DispatchErr = errors.New("no such cluster")
			if o := h.send("x-user=a"); o.status != want {
				t.Fatalf("dispatch error: %+v", o)
			}
			if o := h.send("x-user=a"); mode == "deny" && o.body != `{"error":"ratelimit_unavailable"}`+"\n" {
				t.Fatalf("body: %q", o.body)
			}
			if h.Counters["ratelimit.redis.errors"] != 3 || len(h.logs) != 1 {
				t.Fatalf("errors %d, logs %q: want 3 errors, one log line", h.Counters["ratelimit.redis.errors"], h.logs)
			}
			h.DispatchErr = nil
			if o := h.send("x-user=a"); o.status != 200 {
				t.Fatalf("redis back: %+v", o)
			}
		})
	}
}

// With redis.command evalsha, -NOSCRIPT is answered by EVAL.
func TestNoScriptFallsBackToEval(t *testing.T) {
	h := newFakeHost(t, strings.Replace(perUser, `"cluster":"redis"`, `"cluster":"redis","command":"evalsha"`, 1))
	if _, err := server.Do("SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	if o := h.send("x-user=a"); o.status != 200 || o.headers["ratelimit"] == "" {
		t.Fatalf("after SCRIPT FLUSH: %+v", o)
	}
	if h.Counters["ratelimit.redis.noscript"] != 1 || h.Counters["ratelimit.redis.errors"] != 0 {
		t.Fatalf("metrics: %v", h.Counters)
	}
}

func TestLateReplyAfterStreamEndIsIgnored(t *testing.T) {
	h := newFakeHost(t, perUser)
	fs := filtertest.NewStream("", nil)
	st := h.plugin.NewStream(fs)
	if st.OnRequestHeaders([][2]string{{":path", "/"}, {"x-user", "a"}}) != Pause || h.plugin.Pending() != 1 {
		t.Fatal("not paused on a call")
	}
	st.OnDone()
	if h.plugin.Pending() != 0 {
		t.Fatal("pending call kept after the stream ended")
	}
	h.Pump()
	if fs.Resumed != 0 || fs.Status != 0 {
		t.Fatalf("a finished stream was acted on: %+v", fs)
	}
}

func TestTickFailsOverdueCalls(t *testing.T) {
	h := newFakeHost(t, perUser)
	h.Clock = time.Now()
	fs := filtertest.NewStream("", nil)
	st := h.plugin.NewStream(fs)
	st.OnRequestHeaders([][2]string{{":path", "/"}, {"x-user", "a"}})
	h.plugin.OnTick()
	if fs.Resumed != 0 {
		t.Fatal("a call within its timeout was failed")
	}
	h.Clock = h.Clock.Add(h.plugin.cfg.Redis.Timeout + 2*time.Second)
	h.plugin.OnTick()
	if fs.Resumed != 1 || h.plugin.Pending() != 0 || h.Counters["ratelimit.failure_mode.allowed"] != 1 {
		t.Fatalf("overdue call: resumed %d, pending %d, %v", fs.Resumed, h.plugin.Pending(), h.Counters)
	}
	h.Queue = nil
}

func TestMissingKeyDenyAndCosts(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"units","on_missing_key":"deny",
		"key":[{"source":"header","name":"x-key"}],"cost":{"header":"x-cost","default":2},
		"limits":[{"algorithm":"funnel","capacity":10,"rate":1,"period":"1h"}]}]}`)
	if o := h.send(); o.status != 400 || o.body != `{"error":"missing_key","rule":"units","part":"header x-key"}`+"\n" || len(o.headers) != 1 {
		t.Fatalf("missing key: %+v", o)
	}
	if o := h.send("x-key=k", "x-cost=11"); o.status != 400 || !strings.Contains(o.body, "cost_exceeds_capacity") {
		t.Fatalf("cost above capacity: %+v", o)
	}
	if o := h.send("x-key=k", "x-cost=7"); o.status != 200 || o.headers["ratelimit"] != `"units";r=3;t=25200` {
		t.Fatalf("cost 7: %+v", o)
	}
	if o := h.send("x-key=k", "x-cost=junk"); o.status != 200 || o.headers["ratelimit"] != `"units";r=1;t=32400` {
		t.Fatalf("default cost 2: %+v", o)
	}
	if o := h.send("x-key=k"); o.status != 429 {
		t.Fatalf("over capacity: %+v", o)
	}
}

func TestCircuitBreaker(t *testing.T) {
	h := newFakeHost(t, strings.Replace(perUser, `"headers":"both"`, `"circuit_breaker":{"failures":3,"backoff":"2s"}`, 1))
	h.Clock = time.Now()
	h.Down = true
	for range 3 {
		if o := h.send("x-user=a"); o.status != 200 {
			t.Fatalf("fail open: %+v", o)
		}
	}
	if h.Counters["ratelimit.circuit_breaker.opened"] != 1 {
		t.Fatalf("breaker not opened after 3 failures: %v", h.Counters)
	}
	h.Down = false // Redis is back, but the breaker is open: no call is sent
	if o := h.send("x-user=a"); o.status != 200 || len(h.Queue) != 0 || h.Counters["ratelimit.circuit_breaker.skipped"] != 1 {
		t.Fatalf("open breaker: %+v, skipped %d", o, h.Counters["ratelimit.circuit_breaker.skipped"])
	}
	if h.Counters["ratelimit.failure_mode.allowed"] != 4 || h.Counters["ratelimit.redis.errors"] != 3 {
		t.Fatalf("metrics: %v", h.Counters)
	}
	h.Clock = h.Clock.Add(2 * time.Second)
	if o := h.send("x-user=a"); o.status != 200 || o.headers["ratelimit"] == "" {
		t.Fatalf("after the backoff the call goes through: %+v", o)
	}
	h.Down = true
	h.send("x-user=a")
	h.send("x-user=a")
	if h.Counters["ratelimit.circuit_breaker.opened"] != 1 {
		t.Fatal("a success did not reset the failure count")
	}
	if h.Counters["ratelimit.redis.pending"] != 0 {
		t.Fatalf("pending gauge %d", h.Counters["ratelimit.redis.pending"])
	}
}

// The pending gauge follows the calls in flight, updated on each tick.
func TestPendingGaugeFollowsTicks(t *testing.T) {
	h := newFakeHost(t, perUser)
	fs := filtertest.NewStream("", nil)
	st := h.plugin.NewStream(fs)
	st.OnRequestHeaders([][2]string{{":path", "/"}, {"x-user", "a"}})
	h.plugin.OnTick()
	if got := h.Counters["ratelimit.redis.pending"]; got != 1 {
		t.Fatalf("pending gauge %d with a call in flight after a tick, want 1", got)
	}
	h.Pump()
	h.plugin.OnTick()
	if got := h.Counters["ratelimit.redis.pending"]; got != 0 || fs.Resumed != 1 {
		t.Fatalf("pending gauge %d after the reply and a tick, want 0 (resumed %d)", got, fs.Resumed)
	}
	st.OnDone()
}
