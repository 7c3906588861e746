package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// scenario is one behaviour, checked on every target.
type scenario struct {
	name string
	// rules is the JSON array of rules; the redis section is added.
	rules string
	// top holds extra top-level fields, e.g. `"headers":"both",`.
	top string
	// run is timed with a budget of a second (see timed): the checks of
	// Retry-After and reset seconds hold exactly when every request of
	// the run is decided within a second of the first.
	run func(t *attempt, tg target, prefix string)
}

func configFor(s scenario, prefix, timeout string) string {
	return fmt.Sprintf(`{%s"redis":{"cluster":"redis","timeout":%q,"key_prefix":%q},"rules":%s}`, s.top, timeout, prefix, s.rules)
}

// expect checks a response's status and some of its headers exactly.
func expect(t tester, o outcome, status int, headers ...string) {
	t.Helper()
	if o.status != status {
		t.Fatalf("status %d, want %d (headers %v, body %q)", o.status, status, o.headers, o.body)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if got := o.headers[headers[i]]; got != headers[i+1] {
			t.Fatalf("%s: %q, want %q (all: %v)", headers[i], got, headers[i+1], o.headers)
		}
	}
}

var user = func(u string) map[string]string { return map[string]string{"x-user": u} }

var scenarios = []scenario{
	{
		name: "allowed up to the limit, then 429 with exact headers",
		top:  `"headers":"both",`,
		rules: `[{"name":"per-user","key":[{"source":"header","name":"x-user"}],
			"limits":[{"algorithm":"sliding_log","limit":3,"window":"1m"}]}]`,
		run: func(t *attempt, tg target, prefix string) {
			for r := 2; r >= 0; r-- {
				expect(t, tg.send(t, user("alice")), 200,
					"ratelimit-policy", `"per-user";q=3;w=60`, "ratelimit", fmt.Sprintf(`"per-user";r=%d;t=60`, r),
					"x-ratelimit-limit", "3", "x-ratelimit-remaining", fmt.Sprint(r), "x-ratelimit-reset", "60")
			}
			o := tg.send(t, user("alice"))
			expect(t, o, 429, "retry-after", "60", "ratelimit-policy", `"per-user";q=3;w=60`,
				"ratelimit", `"per-user";r=0;t=60`, "x-ratelimit-remaining", "0", "content-type", "application/json")
			if o.body != `{"error":"rate_limited","rule":"per-user","limit":"per-user","retry_after":60}`+"\n" {
				t.Fatalf("body %q", o.body)
			}
			if tg.metric("ratelimit.rule.per-user.allowed") != 3 || tg.metric("ratelimit.rule.per-user.denied") != 1 {
				t.Fatal("per-rule metrics do not show 3 allowed, 1 denied")
			}
		},
	},
	{
		name: "several limits on one rule: 1 per second and 5 per minute",
		rules: `[{"name":"api","key":[{"source":"header","name":"x-user"}],
			"limits":[{"name":"second","algorithm":"sliding_log","limit":1,"window":"1s"},
			          {"name":"minute","algorithm":"sliding_log","limit":5,"window":"1m"}]}]`,
		run: func(t *attempt, tg target, prefix string) {
			expect(t, tg.send(t, user("u")), 200, "ratelimit-policy", `"second";q=1;w=1, "minute";q=5;w=60`, "ratelimit", `"second";r=0;t=1`)
			o := tg.send(t, user("u"))
			expect(t, o, 429, "retry-after", "1")
			if !strings.Contains(o.body, `"limit":"second"`) {
				t.Fatalf("body %q does not name the per-second limit", o.body)
			}
			if n, _ := server.Do("ZCARD", prefix+"{api|u}:1"); n != int64(1) {
				t.Fatalf("the per-minute log holds %v entries: the denied request was charged", n)
			}
		},
	},
	{
		name: "funnel burst, then drain",
		rules: `[{"name":"burst","key":[{"source":"header","name":"x-user"}],
			"limits":[{"algorithm":"funnel","capacity":3,"rate":2,"period":"1s"}]}]`,
		run: func(t *attempt, tg target, prefix string) {
			// One request drains every T = 500 ms. The burst's checks hold
			// when its four requests are decided within T of the first.
			t.setBudget(500 * time.Millisecond)
			expect(t, tg.send(t, user("u")), 200, "ratelimit", `"burst";r=2;t=1`)
			twoDrained := time.Now().Add(2*500*time.Millisecond + 50*time.Millisecond) // the first was decided before now
			expect(t, tg.send(t, user("u")), 200, "ratelimit", `"burst";r=1;t=1`)
			expect(t, tg.send(t, user("u")), 200, "ratelimit", `"burst";r=0;t=2`)
			expect(t, tg.send(t, user("u")), 429, "retry-after", "1")
			// Two have drained once 2T have passed since the first; the
			// third after them is denied if decided within 3T of the first.
			time.Sleep(time.Until(twoDrained))
			t.setBudget(3 * 500 * time.Millisecond)
			expect(t, tg.send(t, user("u")), 200)
			expect(t, tg.send(t, user("u")), 200)
			expect(t, tg.send(t, user("u")), 429)
		},
	},
	{
		name: "keys keep users and dimensions apart",
		rules: `[{"name":"route","key":[{"source":"header","name":"x-user"},{"source":"path"}],
			"limits":[{"algorithm":"sliding_log","limit":1,"window":"1m"}]}]`,
		run: func(t *attempt, tg target, prefix string) {
			send := func(u, path string) outcome {
				return tg.send(t, map[string]string{"x-user": u, ":path": path})
			}
			expect(t, send("alice", "/a"), 200)
			expect(t, send("alice", "/a?page=2"), 429)
			expect(t, send("alice", "/b"), 200)
			expect(t, send("bob", "/a"), 200)
			expect(t, send("alice|/a", "/"), 200) // no separator injection
			expect(t, send("{alice}", "/a"), 200)
		},
	},
	{
		name: "shadow mode counts but never denies",
		rules: `[{"name":"trial","shadow":true,"key":[{"source":"constant","value":"all"}],
			"limits":[{"algorithm":"sliding_counter","limit":2,"window":"1m"}]}]`,
		run: func(t *attempt, tg target, prefix string) {
			for range 5 {
				if o := tg.send(t, nil); o.status != 200 || o.headers["ratelimit"] != "" {
					t.Fatalf("shadow rule acted: %+v", o)
				}
			}
			if a, d := tg.metric("ratelimit.rule.trial.allowed"), tg.metric("ratelimit.rule.trial.would_deny"); a != 2 || d != 3 {
				t.Fatalf("shadow metrics: %d allowed, %d would_deny; want 2, 3", a, d)
			}
		},
	},
	{
		name: "manual blocking denies as its own reason",
		rules: `[{"name":"api","key":[{"source":"header","name":"x-user"}],
			"limits":[{"algorithm":"sliding_log","limit":100,"window":"1m"}]}]`,
		run: func(t *attempt, tg target, prefix string) {
			if _, err := server.Do("SET", prefix+"{api|mallory}:block", "1", "EX", "300"); err != nil {
				t.Fatal(err)
			}
			o := tg.send(t, user("mallory"))
			expect(t, o, 429, "retry-after", "300")
			if o.body != `{"error":"blocked","rule":"api","retry_after":300}`+"\n" {
				t.Fatalf("body %q", o.body)
			}
			expect(t, tg.send(t, user("alice")), 200)
			if tg.metric("ratelimit.rule.api.blocked") != 1 {
				t.Fatal("blocked metric not counted")
			}
			if n, _ := server.Do("EXISTS", prefix+"{api|mallory}:0"); n != int64(0) {
				t.Fatal("a blocked request was charged")
			}
		},
	},
	{
		name: "SCRIPT FLUSH does not reach the library's functions",
		rules: `[{"name":"api","key":[{"source":"header","name":"x-user"}],
			"limits":[{"algorithm":"funnel","capacity":5,"rate":1,"period":"1s"}]}]`,
		run: func(t *attempt, tg target, prefix string) {
			expect(t, tg.send(t, user("u")), 200, "ratelimit", `"api";r=4;t=1`)
			if _, err := server.Do("SCRIPT", "FLUSH"); err != nil {
				t.Fatal(err)
			}
			expect(t, tg.send(t, user("u")), 200, "ratelimit", `"api";r=3;t=2`)
			if tg.metric("ratelimit.redis.noscript") != 0 || tg.metric("ratelimit.redis.errors") != 0 {
				t.Fatal("a call met NOSCRIPT or an error")
			}
		},
	},
	{
		name: "token bucket permits with a cost header; missing key denied",
		rules: `[{"name":"tokens","on_missing_key":"deny","key":[{"source":"header","name":"x-user"}],
			"cost":{"header":"x-cost","default":1},
			"limits":[{"algorithm":"token_bucket","capacity":10,"refill":1,"period":"1h"}]}]`,
		run: func(t *attempt, tg target, prefix string) {
			expect(t, tg.send(t, map[string]string{"x-user": "u", "x-cost": "6"}), 200, "ratelimit", `"tokens";r=4;t=21600`)
			expect(t, tg.send(t, map[string]string{"x-user": "u", "x-cost": "5"}), 429, "retry-after", "3600")
			expect(t, tg.send(t, map[string]string{"x-user": "u", "x-cost": "4"}), 200, "ratelimit", `"tokens";r=0;t=36000`)
			o := tg.send(t, nil)
			expect(t, o, 400)
			if o.body != `{"error":"missing_key","rule":"tokens","part":"header x-user"}`+"\n" {
				t.Fatalf("body %q", o.body)
			}
		},
	},
}

func TestScenarios(t *testing.T) {
	for _, name := range kinds {
		t.Run(name, func(t *testing.T) {
			for _, s := range scenarios {
				t.Run(s.name, func(t *testing.T) {
					timed(t, time.Second, func(t *attempt) {
						prefix := redistest.Prefix(t)
						s.run(t, startTarget(t.T, name, configFor(s, prefix, "1s"), server.Addr), prefix)
					})
				})
			}
		})
	}
}
