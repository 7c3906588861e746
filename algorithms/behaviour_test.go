package algorithms

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// "1 per second and 3 per minute": once either denies, nothing is charged.
func TestSeveralLimitsAllOrNothing(t *testing.T) {
	c := dial(t)
	p := redistest.Prefix(t)
	perSecond := mustLimit(t)(NewSlidingLog(1, time.Second))
	perMinute := mustLimit(t)(NewSlidingLog(3, time.Minute))
	funnel := mustLimit(t)(NewFunnel(5, 1, time.Minute))
	checks := []Check{{Key: p + "{u}:0", Limit: perSecond, Cost: 1}, {Key: p + "{u}:1", Limit: perMinute, Cost: 1}, {Key: p + "{u}:2", Limit: funnel, Cost: 1}}
	if d := c.decide(p+"{u}:block", checks); !d.Allowed() {
		t.Fatalf("first request denied: %+v", d)
	}
	d := c.decide(p+"{u}:block", checks)
	if d.Allowed() || d.Results[0].Allowed || !d.Results[1].Allowed || !d.Results[2].Allowed {
		t.Fatalf("second request within a second: %+v", d)
	}
	if i := d.Tightest(); i != 0 {
		t.Fatalf("tightest = %d, want the per-second limit", i)
	}
	// The per-minute and funnel limits report what is left, uncharged.
	if d.Results[1].Remaining != 2 || d.Results[2].Remaining != 4 {
		t.Fatalf("uncharged remaining: %+v", d.Results)
	}
	if n, _ := c.do("ZCARD", p+"{u}:1").Int64(); n != 1 {
		t.Fatalf("per-minute log has %d entries after a denied request, want 1", n)
	}
	tat1, _ := c.do("GET", p+"{u}:2").Text()
	c.decide(p+"{u}:block", checks)
	if tat2, _ := c.do("GET", p+"{u}:2").Text(); tat1 != tat2 {
		t.Fatalf("funnel charged by a denied request: %s -> %s", tat1, tat2)
	}
}

// A block key denies before any limit is read, whatever the limits: one
// funnel takes its own path through the script.
func TestBlockKeyDeniesAndChargesNothing(t *testing.T) {
	for name, l := range map[string]Limit{
		"sliding_log": mustLimit(t)(NewSlidingLog(10, time.Minute)),
		"funnel":      mustLimit(t)(NewFunnel(10, 1, time.Second)),
	} {
		t.Run(name, func(t *testing.T) {
			c := dial(t)
			p := redistest.Prefix(t)
			checks := []Check{{Key: p + "{u}:0", Limit: l, Cost: 1}}
			c.do("SET", p+"{u}:block", "1", "PX", "5000")
			d := c.decide(p+"{u}:block", checks)
			if !d.Blocked || d.Allowed() || d.BlockedFor <= 4*time.Second || d.BlockedFor > 5*time.Second || len(d.Results) != 0 {
				t.Fatalf("blocked decision: %+v", d)
			}
			if n, _ := c.do("EXISTS", p+"{u}:0").Int64(); n != 0 {
				t.Fatal("a blocked request wrote the limit's key")
			}
			c.do("PERSIST", p+"{u}:block")
			if d := c.decide(p+"{u}:block", checks); !d.Blocked || d.BlockedFor != -1 {
				t.Fatalf("block without TTL: %+v", d)
			}
			// A call without the block key is not blocked by it.
			if d := c.decide("", checks); !d.Allowed() {
				t.Fatalf("call without the block key: %+v", d)
			}
			c.do("DEL", p+"{u}:block")
			if d := c.decide(p+"{u}:block", checks); !d.Allowed() {
				t.Fatalf("after unblock: %+v", d)
			}
		})
	}
}

// Every key the script writes carries a TTL no longer than its state matters.
func TestEveryKeyHasTTL(t *testing.T) {
	c := dial(t)
	p := redistest.Prefix(t)
	checks := []Check{
		{Key: p + "{u}:0", Limit: mustLimit(t)(NewSlidingLog(10, 1500*time.Millisecond)), Cost: 2},
		{Key: p + "{u}:1", Limit: mustLimit(t)(NewSlidingCounter(10, 2*time.Second)), Cost: 2},
		{Key: p + "{u}:2", Limit: mustLimit(t)(NewFunnel(10, 1, time.Second)), Cost: 3},
	}
	c.decide(p+"{u}:block", checks)
	for key, max := range map[string]int64{p + "{u}:0": 1500, p + "{u}:1": 4000, p + "{u}:2": 3000} {
		ttl, err := c.do("PTTL", key).Int64()
		if err != nil || ttl <= 0 || ttl > max {
			t.Errorf("PTTL %s = %d (%v), want 1..%d", key, ttl, err, max)
		}
	}
}

func TestNoScriptThenEval(t *testing.T) {
	c := dial(t)
	p := redistest.Prefix(t)
	c.do("SCRIPT", "FLUSH")
	checks := []Check{{Key: p + "{k}:0", Limit: mustLimit(t)(NewFunnel(2, 1, time.Second)), Cost: 1}}
	blocks := []string{p + "{k}:block"}
	v := c.roundTrip(AppendCommand(nil, RESP, EvalSHA, blocks, checks))
	var rerr *redisproto.Error
	if !errors.As(v.Err(), &rerr) || rerr.Prefix() != "NOSCRIPT" {
		t.Fatalf("EVALSHA after SCRIPT FLUSH: %v", v)
	}
	var d Decision
	if err := d.Parse(v, 1, 1); !errors.As(err, &rerr) {
		t.Fatalf("Parse of -NOSCRIPT: %v", err)
	}
	if err := d.Parse(c.roundTrip(AppendCommand(nil, RESP, Eval, blocks, checks)), 1, 1); err != nil || !d.Allowed() {
		t.Fatalf("EVAL: %+v %v", d, err)
	}
	if err := d.Parse(c.roundTrip(AppendCommand(nil, RESP, EvalSHA, blocks, checks)), 1, 1); err != nil || !d.Allowed() {
		t.Fatalf("EVALSHA after EVAL: %+v %v", d, err)
	}
}

// Malformed arguments get an error reply on every path through the script,
// and write nothing.
func TestBadArgumentsAreErrors(t *testing.T) {
	c := dial(t)
	p := redistest.Prefix(t)
	for name, args := range map[string][]string{
		"block count":         {"1", p + "{u}:0", "x", "f", "5", "1000", "1"},
		"one funnel":          {"1", p + "{u}:0", "0", "f", "5", "x", "1"},
		"one limit":           {"1", p + "{u}:0", "0", "l", "5", "1000", ""},
		"unknown algorithm":   {"1", p + "{u}:0", "0", "z", "5", "1000", "1"},
		"second of two":       {"2", p + "{u}:0", p + "{u}:1", "0", "f", "5", "1000", "1", "c", "5", "x", "1"},
		"funnel after blocks": {"2", p + "{u}:block", p + "{u}:0", "1", "f", "5", "1000", "-"},
	} {
		v := c.roundTrip(redisproto.AppendCommand(nil, append([]string{"EVAL", Script.Source()}, args...)...))
		var rerr *redisproto.Error
		if !errors.As(v.Err(), &rerr) || !strings.Contains(rerr.Error(), "ratelimit: bad") {
			t.Errorf("%s: %v, want an error reply", name, v)
		}
	}
	if keys, _ := c.do("KEYS", p+"*").Array(); len(keys) != 0 {
		t.Fatalf("keys written: %v", keys)
	}
}

// A cost below -1 is an error on every path of a decision; a bad settle
// is an error, and its call writes nothing, not even its good settles.
func TestBadCostsAndSettlesAreErrors(t *testing.T) {
	c := dial(t)
	p := redistest.Prefix(t)
	k0, k1 := p+"{u}:0", p+"{u}:1"
	good := []string{"l", "5", "1000000", "1", "0", "3"}
	for name, args := range map[string][]string{
		"one funnel, cost -2":    {"1", k0, "0", "f", "5", "1000", "-2"},
		"one log, cost -2":       {"1", k0, "0", "l", "5", "1000", "-2"},
		"two limits, cost -2":    {"2", k0, k1, "0", "f", "5", "1000", "1", "c", "5", "1000", "-2"},
		"settle count":           {"1", k0, "s", "f", "5", "1000", "1", "0"},
		"settle algorithm":       {"1", k0, "s", "z", "5", "1000", "1", "0", "3"},
		"settle negative cost":   {"1", k0, "s", "f", "5", "1000", "1", "0", "-1"},
		"settle negative amount": {"1", k0, "s", "c", "5", "1000", "1", "-1", "3"},
		"settle time":            {"1", k0, "s", "l", "5", "1000", "x", "0", "3"},
		"settle zero interval":   {"1", k0, "s", "f", "5", "0", "1", "0", "3"},
		"second settle":          append(append([]string{"2", k0, k1, "s"}, good...), "f", "5", "1000", "1", "0", ""),
	} {
		v := c.roundTrip(redisproto.AppendCommand(nil, append([]string{"EVAL", Script.Source()}, args...)...))
		var rerr *redisproto.Error
		if !errors.As(v.Err(), &rerr) || !strings.Contains(rerr.Error(), "ratelimit: bad") {
			t.Errorf("%s: %v, want an error reply", name, v)
		}
	}
	if keys, _ := c.do("KEYS", p+"*").Array(); len(keys) != 0 {
		t.Fatalf("keys written: %v", keys)
	}
}
