package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// debtRules: one key, a limit of 1000 of each algorithm that can owe.
const debtRules = `[{"name":"owed","key":[{"source":"header","name":"x-user"}],
	"limits":[{"name":"log","algorithm":"sliding_log","limit":1000,"window":"1h"},
	          {"name":"counter","algorithm":"sliding_counter","limit":1000,"window":"1h"},
	          {"name":"funnel","algorithm":"funnel","capacity":1000,"rate":1000,"period":"1h"}]}]`

// charge charges each limit i of rule owed's key alice costs[i] now (see
// settle) and returns Redis's time of it (µs).
func (e *env) charge(costs ...int64) int64 {
	e.t.Helper()
	rule, _ := e.cfg.Rule("owed")
	base := e.key("owed", "alice")
	var settles []algorithms.Settle
	for i, c := range costs {
		if c > 0 {
			settles = append(settles, algorithms.Settle{Key: keyspace.StateKey(base, i), Limit: rule.Limits[i].Limit, Cost: c})
		}
	}
	return e.settle(settles...)
}

// settle charges each settle's cost now, as a response's cost is charged
// after the fact (a settle never denies), and returns Redis's time of it
// (µs).
func (e *env) settle(settles ...algorithms.Settle) int64 {
	e.t.Helper()
	var s algorithms.Settlement
	err := server.Client.With(func(c *redistest.Conn) error {
		v, err := c.Decode(c.RoundTrip(algorithms.AppendSettle(nil, algorithms.RESP, algorithms.FCall, settles)))
		if err != nil {
			return err
		}
		return s.Parse(v, len(settles))
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return s.Now
}

// redisNow is Redis's clock in µs.
func redisNow(t *testing.T) int64 {
	t.Helper()
	v, err := server.Do("TIME")
	if err != nil {
		t.Fatal(err)
	}
	var sec, us int64
	for i, p := range v.([]any) {
		n, err := strconv.ParseInt(p.(string), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			sec = n
		} else {
			us = n
		}
	}
	return sec*1_000_000 + us
}

// A key charged 1140 against limits of 1000 shows used 1140, remaining
// -140, and when each debt clears: every instant below is computed from
// Redis's clock at the charges, and show, run between them and `after`,
// must report it as a duration within [instant - after, instant - t1].
func TestShowDebt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, debtRules)
	t0 := e.charge(600, 1140, 1140) // the log in two entries: 600, then 540
	t1 := e.charge(540)
	var sh shown
	e.json(&sh, "show", "--rule", "owed", "alice")
	after := redisNow(t)

	const hour, w = int64(3_600_000_000), int64(3_600_000) // µs; the counter's window in ms
	const interval = hour / 1000                           // the funnel's T, µs
	idx := t0 / 1000 / w                                   // the counter's window of its charge
	type want struct {
		remainingAtAfter int64 // remaining is -140 at the charge and rises with time
		clears, full     int64 // instants, µs
	}
	wants := []want{
		// The log owes its 140 oldest units: they leave with its first entry.
		{-140, t0 + hour, t1 + hour},
		// The counter's 1140 count as the previous window's once its
		// window is over; remaining is back to 0 when 1140·(w-e) <= 1000·w.
		{counterRemaining(idx, after, w), ((idx+1)*w + w - 1000*w/1140) * 1000, (idx + 2) * w * 1000},
		// The funnel's TAT is t0 + 1140·T; it owes until TAT - 1000·T.
		{floorDiv(after-t0-140*interval, interval), t0 + 140*interval, t0 + 1140*interval},
	}
	if len(sh.Limits) != 3 || !sh.Denied {
		t.Fatalf("show: %+v", sh)
	}
	within := func(what string, gotMs, instant int64) {
		t.Helper()
		if lo, hi := (instant-after)/1000, (instant-t1)/1000; gotMs < lo || gotMs > hi {
			t.Errorf("%s: %dms, want within [%d, %d]", what, gotMs, lo, hi)
		}
	}
	for i, w := range wants {
		l := sh.Limits[i]
		if l.Limit != 1000 || l.Remaining < -140 || l.Remaining > w.remainingAtAfter || l.Used != l.Limit-l.Remaining {
			t.Errorf("%s: limit %d, used %d, remaining %d; want 1000, 1140 and -140 (or up to %d, later)",
				l.Name, l.Limit, l.Used, l.Remaining, w.remainingAtAfter)
		}
		within(l.Name+" debt_clears_ms", l.DebtClearsMs, w.clears)
		within(l.Name+" reset_ms", l.ResetMs, w.full)
		if l.RetryAfterMs < l.DebtClearsMs {
			t.Errorf("%s: retry after %dms, before its debt clears (%dms)", l.Name, l.RetryAfterMs, l.DebtClearsMs)
		}
	}

	// Show charged nothing: the log, which cannot drain within the test,
	// reads the same again.
	var again shown
	e.json(&again, "show", "--rule", "owed", "alice")
	if again.Limits[0].Used != 1140 {
		t.Errorf("show again: the log used %d; want 1140", again.Limits[0].Used)
	}

	out := regexp.MustCompile(`  +`).ReplaceAllString(e.ok("show", "--rule", "owed", "alice"), "|")
	for _, want := range []string{
		"\nnow|denied by log, counter, funnel, retry after ",
		"\ndebt|log is 140 over its limit: remaining back to 0 in ",
		"\nlog|sliding_log|1000|1140|-140|",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show: output lacks %q:\n%s", want, out)
		}
	}
}

// Debt on the limits Redis picks: a tier assigned in Redis, then an
// override, each read at its own state key.
func TestShowDebtChosenInRedis(t *testing.T) {
	t.Parallel()
	e := newEnv(t, tierRules)
	rule, _ := e.cfg.Rule("plan")
	base := e.key("plan", "bob")
	e.ok("tier", "set", "--rule", "plan", "--tier", "gold", "bob")
	e.settle(algorithms.Settle{Key: keyspace.StateKey(base, 1), Limit: rule.Tiers.Levels[1].Limits[1].Limit, Cost: 130})
	var sh shown
	e.json(&sh, "show", "--rule", "plan", "bob")
	if sh.Tier != "gold" || len(sh.Limits) != 2 {
		t.Fatalf("gold: %+v", sh)
	}
	// The funnel's T is 36s: its remaining may rise by one while the test runs.
	if l := sh.Limits[1]; l.Name != "hour" || l.Remaining < -30 || l.Remaining > -29 || l.Used != 100-l.Remaining ||
		l.DebtClearsMs <= 0 || l.DebtClearsMs > 30*36_000 || sh.Limits[0].Remaining != 5 {
		t.Errorf("gold after 130 of 100 charged to hour: %+v", sh.Limits)
	}

	mine, err := algorithms.NewSlidingLog(9, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	e.ok("override", "set", "--rule", "plan", "--limits", `[{"algorithm":"sliding_log","limit":9,"window":"1m"}]`, "bob")
	e.settle(algorithms.Settle{Key: keyspace.StateKey(base, 0), Limit: mine, Cost: 12})
	e.json(&sh, "show", "--rule", "plan", "bob")
	if l := sh.Limits; !sh.OverrideApplied || len(l) != 1 || l[0].Used != 12 || l[0].Remaining != -3 ||
		l[0].DebtClearsMs <= 0 || l[0].DebtClearsMs > 60_000 {
		t.Errorf("override after 12 of 9 charged: %+v", sh)
	}
}

// counterRemaining is a sliding counter's remaining at now (µs) after 1140
// were charged in window idx (w ms), with a limit of 1000.
func counterRemaining(idx, now, w int64) int64 {
	nowMs := now / 1000
	cur, prev := int64(1140), int64(0)
	if nowMs/w == idx+1 {
		cur, prev = 0, 1140
	} else if nowMs/w > idx+1 {
		cur = 0
	}
	e := nowMs - nowMs/w*w
	return floorDiv(1000*w-prev*(w-e)-cur*w, w)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
