package filter

import (
	"strconv"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
)

// A rule's tiers and overrides as the script's choices: the tier a
// request names, the choice a call carries, the picks its reply reports,
// and the key and limit each result is about (call.target).

// Tier values beside a tier's index.
const (
	tierOverride = -1 // an operator's override decided
	tierAny      = -2 // a deny cache lookup before Redis picked: any tier
)

// localTier returns the tier a request names in a header or key part
// (the default when it names none or an unknown one); 0 for a rule
// without tiers, tierAny when Redis names it.
func (s *Stream) localTier(rule *config.Rule, hops int) int {
	t := rule.Tiers
	switch {
	case t == nil:
		return 0
	case t.From == config.TierFromHeader:
		v, _ := s.req.header(t.Header)
		return t.TierIndex(v)
	case t.From == config.TierFromKeyPart:
		v, _ := s.req.keyPartValue(rule.Key[t.KeyPart], hops)
		return t.TierIndex(v)
	}
	return tierAny
}

// addChoice adds a rule whose limits Redis picks to call c, keyed by
// s.ruleKey: an operator's override, or its tier.
// Its keys go into c.keys, each starting with the rule's key, until seal.
func (s *Stream) addChoice(c *call, ri, tier int, cost int64, checkOnly bool) {
	rule, h := &s.pol.cfg.Rules[ri], &s.pol.headers[ri]
	ch := algorithms.Choice{Cost: cost, CheckOnly: checkOnly, Tiers: h.Choices}
	if rule.HasConcurrency() {
		ch.Slot, c.slot = s.slotID(), s.slotID()
	}
	at := choiceAt{first: len(c.choiceOrigins), base: len(c.keys)}
	key := func(suffix string) (int, int) {
		from := len(c.keys)
		c.keys = append(append(c.keys, s.ruleKey...), suffix...)
		return from, len(c.keys)
	}
	if tier >= 0 {
		ch.Tiers = h.LevelTiers[tier]
	} else {
		at.tier[0], at.tier[1] = key(keyspace.TierSuffix)
	}
	if rule.Overrides {
		at.over[0], at.over[1] = key(keyspace.OverrideSuffix)
	}
	for i := range rule.Positions() {
		from := len(c.keys)
		c.keys = append(append(c.keys, s.ruleKey...), ':')
		c.keys = strconv.AppendInt(c.keys, int64(i), 10)
		c.choiceOrigins = append(c.choiceOrigins, origin{rule: ri, limit: i, tier: tier, cost: cost, choice: len(c.choices),
			keyAt: from, at: len(c.keys), ruleKeyAt: at.base, ruleKeyLen: len(s.ruleKey)})
	}
	c.choices, c.choiceAt = append(c.choices, ch), append(c.choiceAt, at)
}

// choiceAt locates a choice's keys in call.keys until seal: its tier and
// override keys (ends 0 when not sent), and its rule key's start; its
// positions' origins start at choiceOrigins[first].
type choiceAt struct {
	tier, over  [2]int
	base, first int
}

// sealChoices sets the choices' keys from all, the call's keys as one
// string, and puts their origins after the checks'.
func (c *call) sealChoices(all string) {
	if cap(c.choiceKeys) < len(c.choiceOrigins) {
		c.choiceKeys = make([]string, 0, len(c.choiceOrigins))
	}
	c.choiceKeys = c.choiceKeys[:0]
	for i := range c.choiceOrigins {
		o := &c.choiceOrigins[i]
		o.ruleKey = all[o.ruleKeyAt : o.ruleKeyAt+o.ruleKeyLen]
		c.choiceKeys = append(c.choiceKeys, all[o.keyAt:o.at])
	}
	for i := range c.choices {
		ch, at := &c.choices[i], &c.choiceAt[i]
		if at.tier[1] > 0 {
			ch.TierKey = all[at.tier[0]:at.tier[1]]
		}
		if at.over[1] > 0 {
			ch.OverrideKey = all[at.over[0]:at.over[1]]
		}
		end := len(c.choiceOrigins)
		if i+1 < len(c.choiceAt) {
			end = c.choiceAt[i+1].first
		}
		ch.Keys = c.choiceKeys[at.first:end]
	}
	c.origins = append(c.origins, c.choiceOrigins...)
}

// notePicks records, once the reply is in, what each choice picked: the
// tier of its origins and, for an override, the limit each decided.
func (c *call) notePicks() {
	d := &c.decision
	if len(c.choices) == 0 || d.Blocked || len(d.Picks) != len(c.choices) {
		return
	}
	n := len(c.checks)
	for i := n; i < len(c.origins) && i < len(d.Results); i++ {
		o := &c.origins[i]
		o.picked = d.Picked[i-n]
		switch pick := d.Picks[o.choice]; {
		case pick == algorithms.PickOverride:
			o.tier = tierOverride
		case o.tier == tierAny: // Redis named the tier
			o.tier = pick
		} // else the request named its tier, the one tier sent
	}
}

// target returns the key and limit of c.origins[i], and whether it checked
// only; ok is false for a choice's position left unused. A call that
// failed (admitted by the failure mode) picked nothing: its choices'
// positions are taken as the request's tier, or the default.
func (c *call) target(i int, cfg *config.Config) (key string, l algorithms.Limit, checkOnly, ok bool) {
	if i < len(c.checks) {
		chk := &c.checks[i]
		return chk.Key, chk.Limit, chk.CheckOnly, true
	}
	o, ch := &c.origins[i], &c.choices[c.origins[i].choice]
	l = o.picked
	if c.err != nil {
		limits := cfg.Rules[o.rule].TierLimits(max(o.tier, 0))
		if o.limit >= len(limits) {
			return "", l, false, false
		}
		l = limits[o.limit].Limit
	}
	return ch.Keys[o.limit], l, ch.CheckOnly, l.Algorithm != 0
}
