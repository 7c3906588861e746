package algorithms

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// Calls with choices go through the real script and the Model while an
// operator assigns tiers, sets overrides and clears both at random: every
// Decision, picks included, must agree exactly.
func TestScriptMatchesModelWithChoices(t *testing.T) {
	rng, c, model, p := newProperty(t, 3)
	must := mustLimit(t)
	// Position i of every tier and override shares one state: one
	// algorithm, and for the counter one window. A sliding log's key
	// expires by the windows it was charged under, which the Model does
	// not follow: the logs share one window too.
	tiers := []Tier{
		{Name: "free", Limits: []Limit{must(NewSlidingCounter(4, 30*time.Millisecond)), must(NewFunnel(3, 2, 20*time.Millisecond))}},
		{Name: "pro", Limits: []Limit{must(NewSlidingCounter(9, 30*time.Millisecond)), must(NewFunnel(6, 5, 20*time.Millisecond)), must(NewSlidingLog(7, 40*time.Millisecond)),
			must(NewConcurrency(2, 25*time.Millisecond))}},
		{Name: "solo", Limits: []Limit{must(NewSlidingCounter(2, 30*time.Millisecond))}},
	}
	overrides := [][]Limit{
		{must(NewSlidingCounter(12, 30*time.Millisecond))},
		{must(NewSlidingCounter(1, 30*time.Millisecond)), must(NewFunnel(2, 1, 10*time.Millisecond)), must(NewSlidingLog(3, 40*time.Millisecond))},
		{must(NewSlidingCounter(12, 30*time.Millisecond)), must(NewFunnel(9, 9, 10*time.Millisecond)), must(NewSlidingLog(9, 40*time.Millisecond)),
			must(NewConcurrency(1, 20*time.Millisecond))},
	}
	plain := must(NewSlidingLog(20, 50*time.Millisecond))
	seen := map[string]int{}
	for step := range 600 {
		user := rng.IntN(2)
		base := fmt.Sprintf("%s{u%d}", p, user)
		if rng.IntN(12) == 0 {
			name := []string{"free", "pro", "solo", "gold"}[rng.IntN(4)] // gold is unknown
			c.do("SET", base+":tier", name)
			model.Tiers[base+":tier"] = name
		}
		if rng.IntN(12) == 0 {
			c.do("DEL", base+":tier")
			delete(model.Tiers, base+":tier")
		}
		if rng.IntN(15) == 0 {
			v, err := EncodeOverride(overrides[rng.IntN(len(overrides))])
			if err != nil {
				t.Fatal(err)
			}
			c.do("SET", base+":override", v)
			model.Overrides[base+":override"] = v
		}
		if rng.IntN(10) == 0 {
			c.do("DEL", base+":override")
			delete(model.Overrides, base+":override")
		}
		choice := Choice{TierKey: base + ":tier", OverrideKey: base + ":override", Tiers: tiers,
			Keys: []string{base + ":0", base + ":1", base + ":2", base + ":3"}, Cost: 1 + rng.Int64N(2), Slot: int64(step + 1)}
		if rng.IntN(5) == 0 {
			choice.Slot = 0 // a concurrency limit takes the cost: a peek or a check
		}
		switch rng.IntN(6) {
		case 0:
			choice.TierKey = "" // a tier from a header: the default alone is sent
			choice.Tiers = tiers[rng.IntN(len(tiers)):][:1]
		case 1:
			choice.OverrideKey = ""
		case 2:
			choice.CheckOnly = true
		case 3:
			choice.Cost = 0
		}
		var checks []Check
		if rng.IntN(3) == 0 {
			checks = []Check{{Key: base + ":9", Limit: plain, Cost: 1}}
		}
		block, pttls := "", []int64(nil)
		if rng.IntN(3) == 0 {
			block, pttls = base+":block", []int64{-2}
			if rng.IntN(8) == 0 { // blocked, with or without plain limits
				c.do("SET", block, "1")
				pttls = []int64{-1}
			}
		}
		got := c.decideCall(block, checks, []Choice{choice})
		want := model.DecideCall(got.Now, pttls, checks, []Choice{choice})
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d, choice %+v, checks %+v:\nscript %+v\nmodel  %+v", step, choice, checks, got, want)
		}
		if got.Blocked {
			c.do("DEL", block)
			seen["blocked"]++
			continue
		}
		pick := "override"
		if got.Picks[0] >= 0 {
			pick = choice.Tiers[got.Picks[0]].Name
		}
		verdict := "denied"
		if got.Allowed() {
			verdict = "allowed"
		}
		seen[pick]++
		seen[verdict]++
		if r := got.Results[len(checks)+3]; got.Picked[3].Algorithm == Concurrency {
			seen["slot "+map[bool]string{true: "allowed", false: "denied"}[r.Allowed]]++
		}
		if rng.IntN(4) == 0 {
			time.Sleep(time.Duration(rng.IntN(6000)) * time.Microsecond)
		}
	}
	for _, k := range []string{"free", "pro", "solo", "override", "allowed", "denied", "blocked", "slot allowed", "slot denied"} {
		if seen[k] == 0 {
			t.Errorf("no call %s: %v", k, seen)
		}
	}
}

// decideCall runs a call with choices through the library's decide, and
// parses the reply both ways, which must agree.
func (c *conn) decideCall(block string, checks []Check, choices []Choice) Decision {
	c.t.Helper()
	var blocks []string
	if block != "" {
		blocks = []string{block}
	}
	raw, err := c.send(AppendCall(nil, RESP, FCall, OpDecide, blocks, checks, choices))
	if err != nil {
		c.t.Fatal(err)
	}
	v, _, err := redisproto.Decode(raw)
	if err != nil {
		c.t.Fatal(err)
	}
	var full, flat Decision
	if err := full.ParseCall(v, len(blocks), len(checks), choices); err != nil {
		c.t.Fatal(err)
	}
	if ok, err := flat.ParseRESPCall(raw, len(blocks), len(checks), choices); ok && (err != nil || !reflect.DeepEqual(flat, full)) {
		c.t.Fatalf("ParseRESPCall %+v, %v; ParseCall %+v", flat, err, full)
	}
	return full
}
