package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter"
	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
)

// show reports a concurrency limit's slots held as used, and when every
// slot is taken, the wait until the earliest would expire; it holds none.
func TestShowConcurrency(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `[{"name":"llm","key":[{"source":"header","name":"x-user"}],
		"limits":[{"name":"slots","algorithm":"concurrency","limit":2,"max_duration":"1m"}]}]`)
	p := newProxy(t, e)
	open := func() *filter.Stream {
		s := filtertest.NewStream("127.0.0.1:40000", nil)
		st := p.plugin.NewStream(s)
		st.OnRequestHeaders([][2]string{{":method", "GET"}, {":path", "/"}, {"x-user", "alice"}})
		p.Pump()
		if s.Status != 0 || s.Resumed != 1 {
			t.Fatalf("request not admitted: %+v", s)
		}
		return st
	}
	first, second := open(), open()
	var sh shown
	for range 2 { // twice: show takes no slot
		e.json(&sh, "show", "--rule", "llm", "alice")
		checkLimits(t, "two requests in flight", sh.Limits, limitShown{Name: "slots", Algorithm: "concurrency", Limit: 2, Used: 2})
	}
	if l := sh.Limits[0]; !sh.Denied || l.RetryAfterMs <= 0 || l.RetryAfterMs > 60_000 || l.ResetMs < l.RetryAfterMs || l.ResetMs > 60_000 {
		t.Errorf("with every slot taken: %+v", sh)
	}
	out := regexp.MustCompile(`  +`).ReplaceAllString(e.ok("show", "--rule", "llm", "alice"), "|")
	if want := "\nslots|concurrency|2|2|0|"; !strings.Contains(out, want) || !strings.Contains(out, "now|denied by slots, retry after ") {
		t.Errorf("show: output lacks %q:\n%s", want, out)
	}
	first.OnDone()
	p.Pump()
	e.json(&sh, "show", "--rule", "llm", "alice")
	checkLimits(t, "one request in flight", sh.Limits, limitShown{Name: "slots", Algorithm: "concurrency", Limit: 2, Used: 1})
	if sh.Denied || sh.Limits[0].RetryAfterMs != -1 {
		t.Errorf("with a slot free: %+v", sh)
	}
	second.OnDone()
	p.Pump()
}
