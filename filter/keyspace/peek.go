package keyspace

import (
	"strings"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/algorithms/lua"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
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
	at := 0
	switch t := rule.Tiers; {
	case tier == "":
	case t == nil:
		return nil, format.Errorf("rule %s has no tiers", rule.Name)
	case t.From == config.TierFromRedis:
		return nil, format.Errorf("rule %s takes its tier from Redis: set it with tier set", rule.Name)
	default:
		at = t.TierIndex(tier)
		if t.Levels[at].Name != tier {
			return nil, format.Errorf("rule %s has no tier %q (tiers: %s)", rule.Name, tier, strings.Join(rule.TierNames(), ", "))
		}
	}
	pk := PeekAt(rule, base, at)
	if rule.ManualBlock {
		pk.blocks = []string{BlockKey(base)}
	}
	return pk, nil
}

// PeekAt prepares the call reading base, a key of rule, in tier, an index
// of the rule's tiers (0 without tiers; ignored when Redis names the
// tier), as a request naming that tier meets it, without its block key.
// The filter's quota endpoint reads a caller's keys so (see AppendPeeks).
func PeekAt(rule *config.Rule, base string, tier int) *Peek {
	pk := &Peek{rule: rule, tier: tier}
	if rule.TiersFromRedis() {
		pk.tier = tierAny
	}
	if !rule.ChosenInRedis() {
		for i, l := range rule.TierLimits(pk.tier) {
			pk.checks = append(pk.checks, algorithms.Check{Key: StateKey(base, i), Limit: l.Limit, CheckOnly: true})
		}
		return pk
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
	return pk
}

// Args is the command, as arguments for a Redis client: FCALL_RO of the
// library's peek, or with EvalSHA or Eval the script's decide, checking
// only as well.
func (pk *Peek) Args(inv algorithms.Invoke) []any {
	return readOnly(clientArgs(algorithms.AppendCall(nil, algorithms.RESP, inv, algorithms.OpDecide, pk.blocks, pk.checks, pk.choices)))
}

// readOnly makes a command's FCALL of the library FCALL_RO of its peek,
// which writes nothing (flagged no-writes), so that Redis runs it on a
// replica and when it is full under maxmemory; peek decides, or settles,
// as the others do, refusing a call that charges. EVALSHA and EVAL are
// left as they are: the script has no read-only entry point.
func readOnly(args []any) []any {
	if args[0] == "FCALL" {
		args[0], args[1] = "FCALL_RO", lua.Library.Peek
	}
	return args
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
	if err := d.FromIntsCall(reply, len(pk.blocks), len(pk.checks), pk.choices); err != nil {
		return KeyState{}, err
	}
	if d.Blocked {
		return KeyState{Blocked: true, BlockedFor: d.BlockedFor}, nil
	}
	return pk.state(&d, 0, 0, 0), nil
}

// state reads pk's part of a decision: its checks' results from check
// and its choice, if any, as choice, whose positions' results start at
// pos (an index into the choices' positions).
func (pk *Peek) state(d *algorithms.Decision, check, choice, pos int) KeyState {
	var ks KeyState
	tier := pk.tier
	if len(pk.choices) == 1 && choice < len(d.Picks) {
		switch {
		case d.Picks[choice] == algorithms.PickOverride:
			tier, ks.Override = tierOverride, true
		case tier == tierAny:
			tier = d.Picks[choice]
		}
	}
	if t := pk.rule.Tiers; t != nil && tier >= 0 {
		ks.Tier = t.Levels[tier].Name
	}
	overrides := pk.rule.OverrideNames()
	nc := len(d.Results) - len(d.Picked) // the call's checks
	for i := range len(pk.checks) + pk.positions() {
		var l algorithms.Limit
		var key string
		var r algorithms.Result
		if i < len(pk.checks) {
			l, key, r = pk.checks[i].Limit, pk.checks[i].Key, d.Results[check+i]
		} else {
			at := pos + i - len(pk.checks)
			l, key, r = d.Picked[at], pk.choices[0].Keys[i-len(pk.checks)], d.Results[nc+at]
		}
		if r.Unused() {
			continue
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
	return ks
}

// positions is the number of pk's choice's positions (0 without).
func (pk *Peek) positions() int {
	if len(pk.choices) == 0 {
		return 0
	}
	return len(pk.choices[0].Keys)
}

// Limits is the number of limit states the peek reads: what it adds to a
// call, against config.MaxRequestLimits.
func (pk *Peek) Limits() int { return len(pk.checks) + pk.positions() }

// AppendPeeks appends one call reading every key of peeks, for Redis
// Cluster only when their keys share one hash tag: their checks, then
// their choices, as FCALL of the library's peek (or EvalSHA or Eval of
// the script's decide, checking only as well). Each must be a PeekAt:
// block keys are not read.
func AppendPeeks(dst []byte, f algorithms.Framing, inv algorithms.Invoke, peeks []*Peek) []byte {
	var checks []algorithms.Check
	var choices []algorithms.Choice
	for _, pk := range peeks {
		checks = append(checks, pk.checks...)
		choices = append(choices, pk.choices...)
	}
	op := algorithms.OpPeek
	if inv != algorithms.FCall {
		op = algorithms.OpDecide
	}
	return algorithms.AppendCall(dst, f, inv, op, nil, checks, choices)
}

// DecodePeeks reads the reply to AppendPeeks' call, given as its
// integers, into one KeyState per peek, appended to states.
func DecodePeeks(states []KeyState, reply []int64, peeks []*Peek) ([]KeyState, error) {
	var d algorithms.Decision
	var checks int
	var choices []algorithms.Choice
	for _, pk := range peeks {
		checks += len(pk.checks)
		choices = append(choices, pk.choices...)
	}
	if err := d.FromIntsCall(reply, 0, checks, choices); err != nil {
		return states, err
	}
	check, choice, pos := 0, 0, 0
	for _, pk := range peeks {
		states = append(states, pk.state(&d, check, choice, pos))
		check += len(pk.checks)
		choice += len(pk.choices)
		pos += pk.positions()
	}
	return states, nil
}
