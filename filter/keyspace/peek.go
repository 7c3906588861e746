package keyspace

import (
	"fmt"
	"strings"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// Peek is the script call that reads one rule key's state as the filter
// decides a request, charging nothing: every limit checks only (decided
// as a cost of 1, see algorithms.Check.CheckOnly), with the rule's block
// key, tier and override as a request would meet them.
type Peek struct {
	rule    *config.Rule
	tier    int
	blocks  []string
	checks  []algorithms.Check
	choices []algorithms.Choice
}

// Tier values beside a tier's index, as package filter has them.
const (
	tierOverride = -1 // an operator's override decided
	tierAny      = -2 // Redis names the tier
)

// KeyState is what Peek found.
type KeyState struct {
	Blocked    bool
	BlockedFor time.Duration // -1: until unblocked
	// Tier is the tier that decided ("" when the rule has none);
	// Override is set when an operator's override decided instead.
	Tier     string
	Override bool
	Limits   []LimitState
}

// LimitState is one limit of a key, as a request of cost 1 would find it.
// Peek reports Used up to Limit and Remaining down to 0; a Debt read
// reports how far past them a limit is (see Debt).
type LimitState struct {
	Name, Algorithm string
	Key             string // its state key
	Limit, Used     int64
	Remaining       int64
	Reset           time.Duration // until the state is full: Used 0
	RetryAfter      time.Duration // -1 when a request of cost 1 fits now
	Clears          time.Duration // until Remaining is back to >= 0; 0 when it is
	Window          time.Duration // the policy's window (RateLimit-Policy w)
	Quota           int64         // the policy's quota (RateLimit-Policy q)
	Decided         algorithms.Limit
}

// NewPeek prepares the call reading base, a key of rule, a rule of c (see RuleKey). tier
// names the tier when a header or key part names it ("" is the default);
// it must be "" when Redis names it.
func NewPeek(c *config.Config, rule *config.Rule, base, tier string) (*Peek, error) {
	pk := &Peek{rule: rule}
	switch t := rule.Tiers; {
	case tier == "":
	case t == nil:
		return nil, fmt.Errorf("rule %s has no tiers", rule.Name)
	case t.From == config.TierFromRedis:
		return nil, fmt.Errorf("rule %s takes its tier from Redis: set it with tier set", rule.Name)
	default:
		pk.tier = t.TierIndex(tier)
		if t.Levels[pk.tier].Name != tier {
			return nil, fmt.Errorf("rule %s has no tier %q (tiers: %s)", rule.Name, tier, strings.Join(rule.TierNames(), ", "))
		}
	}
	if rule.TiersFromRedis() {
		pk.tier = tierAny
	}
	if rule.ManualBlock {
		pk.blocks = []string{BlockKey(base)}
	}
	if !rule.ChosenInRedis() {
		for i, l := range rule.TierLimits(pk.tier) {
			pk.checks = append(pk.checks, algorithms.Check{Key: StateKey(base, i), Limit: l.Limit, CheckOnly: true})
		}
		return pk, nil
	}
	tiers := rule.ScriptTiers()
	ch := algorithms.Choice{CheckOnly: true, Tiers: tiers}
	if pk.tier >= 0 {
		ch.Tiers = []algorithms.Tier{tiers[pk.tier]}
	} else {
		ch.TierKey = TierKey(base)
	}
	if rule.Overrides {
		ch.OverrideKey = OverrideKey(base)
	}
	for i := range rule.Positions() {
		ch.Keys = append(ch.Keys, StateKey(base, i))
	}
	pk.choices = []algorithms.Choice{ch}
	return pk, nil
}

// Args is the command, as arguments for a Redis client: FCALL of the
// library's peek, or with EvalSHA or Eval the script's decide, checking
// only as well.
func (pk *Peek) Args(inv algorithms.Invoke) []any {
	op := algorithms.OpPeek
	if inv != algorithms.FCall {
		op = algorithms.OpDecide
	}
	return clientArgs(algorithms.AppendCall(nil, algorithms.RESP, inv, op, pk.blocks, pk.checks, pk.choices))
}

// clientArgs is a command, as algorithms writes it in RESP, as arguments
// for a Redis client.
func clientArgs(cmd []byte) []any {
	v, _, err := redisproto.Decode(cmd)
	if err != nil {
		panic("keyspace: a command that does not decode: " + err.Error()) // a defect of algorithms' writers
	}
	elems, _ := v.Array()
	args := make([]any, len(elems))
	for i := range elems {
		args[i], _ = elems[i].Text()
	}
	return args
}

// Decode reads the script's reply, given as its integers.
func (pk *Peek) Decode(reply []int64) (KeyState, error) {
	var d algorithms.Decision
	var ks KeyState
	if err := d.FromIntsCall(reply, len(pk.blocks), len(pk.checks), pk.choices); err != nil {
		return ks, err
	}
	if d.Blocked {
		ks.Blocked, ks.BlockedFor = true, d.BlockedFor
		return ks, nil
	}
	tier := pk.tier
	if len(d.Picks) == 1 {
		switch {
		case d.Picks[0] == algorithms.PickOverride:
			tier, ks.Override = tierOverride, true
		case tier == tierAny:
			tier = d.Picks[0]
		}
	}
	if t := pk.rule.Tiers; t != nil && tier >= 0 {
		ks.Tier = t.Levels[tier].Name
	}
	overrides := pk.rule.OverrideNames()
	for i, r := range d.Results {
		if r.Unused() {
			continue
		}
		var l algorithms.Limit
		var key string
		if i < len(pk.checks) {
			l, key = pk.checks[i].Limit, pk.checks[i].Key
		} else {
			l, key = d.Picked[i-len(pk.checks)], pk.choices[0].Keys[i-len(pk.checks)]
		}
		name := overrides[i]
		if tier >= 0 {
			name = pk.rule.Levels()[tier].Limits[i].Name
		}
		q, w := l.Policy()
		ks.Limits = append(ks.Limits, LimitState{Name: name, Algorithm: l.Algorithm.String(), Key: key,
			Limit: r.Limit, Used: max(0, r.Limit-r.Remaining), Remaining: r.Remaining, Reset: r.ResetAfter,
			RetryAfter: r.RetryAfter, Window: w, Quota: q, Decided: l})
	}
	return ks, nil
}
