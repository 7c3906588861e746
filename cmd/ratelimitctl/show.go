package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/algorithms/lua"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
)

// showCmd is "show": a key's state as the filter would decide a request
// now, through the filter's own script at cost 0 (keyspace.Peek).
type showCmd struct {
	rule, tier string
}

func (c *showCmd) flags(fs *flag.FlagSet) {
	ruleFlag(fs, &c.rule)
	fs.StringVar(&c.tier, "tier", "", "the `tier` a request would name in its header (default: the rule's default tier)")
}

func (c *showCmd) check([]string) error { return needRule(c.rule) }

// shown is show's result.
type shown struct {
	Rule  string   `json:"rule"`
	Parts []string `json:"parts"`
	Key   string   `json:"key"`
	// Denied: a request of cost 1 would be denied now, blocked or by a limit.
	Denied  bool `json:"denied"`
	Blocked bool `json:"blocked"` // the filter denies it as blocked
	// Block, AssignedTier and Override are those keys, null when absent.
	Block        *keyInfo `json:"block"`
	AssignedTier *keyInfo `json:"assigned_tier"`
	Override     *keyInfo `json:"override"`
	// OverrideLimits is the override's limits as override set takes them
	// (Override.Value is their encoding in Redis).
	OverrideLimits json.RawMessage `json:"override_limits,omitempty"`
	// Tier is the tier whose limits applied ("" when the rule has none);
	// OverrideApplied says the override's limits applied instead.
	Tier            string       `json:"tier,omitempty"`
	OverrideApplied bool         `json:"override_applied"`
	Limits          []limitShown `json:"limits"`

	manualBlock, tiers, tiersFromRedis, overrides bool
}

// keyInfo is one key of the key space and its TTL.
type keyInfo struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	TTLms int64  `json:"ttl_ms"` // -1: none
}

// limitShown is one limit. Responses' costs are charged after the fact,
// so a limit may be in debt: Used above Limit, Remaining below 0 (a
// limit of 1000 charged 1140: used 1140, remaining -140).
type limitShown struct {
	Name      string `json:"name"`
	Algorithm string `json:"algorithm"`
	Limit     int64  `json:"limit"`
	Used      int64  `json:"used"`
	Remaining int64  `json:"remaining"`
	ResetMs   int64  `json:"reset_ms"` // until the state is full: used 0
	// RetryAfterMs is -1 when a request of cost 1 would pass now.
	RetryAfterMs int64 `json:"retry_after_ms"`
	// DebtClearsMs is how long until Remaining is back to 0; 0 when
	// nothing is owed.
	DebtClearsMs int64 `json:"debt_clears_ms"`
}

func (c *showCmd) run(ctx context.Context, s *session, parts []string) (result, error) {
	rule, base, err := s.target(c.rule, parts)
	if err != nil {
		return nil, err
	}
	tier, err := c.peekTier(rule, parts)
	if err != nil {
		return nil, err
	}
	pk, err := keyspace.NewPeek(s.cfg, rule, base, tier)
	if err != nil {
		return nil, err
	}
	st, err := s.peek(ctx, pk, base)
	if err != nil {
		return nil, err
	}
	keys, err := s.readKeys(ctx, keyspace.BlockKey(base), keyspace.TierKey(base), keyspace.OverrideKey(base))
	if err != nil {
		return nil, err
	}
	r := &shown{Rule: rule.Name, Parts: parts, Key: base, Blocked: st.Blocked, Block: keys[0],
		AssignedTier: keys[1], Override: keys[2], Tier: st.Tier, OverrideApplied: st.Override,
		Limits: []limitShown{}, manualBlock: rule.ManualBlock, tiers: rule.TierNames() != nil,
		tiersFromRedis: rule.TiersFromRedis(), overrides: rule.OverridesEnabled()}
	if r.Override != nil {
		if ls := overrideLimits(r.Override.Value); json.Valid([]byte(ls)) {
			r.OverrideLimits = json.RawMessage(ls)
		}
	}
	r.Denied = st.Blocked
	for i, l := range st.Limits {
		if l.Name == "" {
			l.Name = "#" + strconv.Itoa(i)
		}
		r.Limits = append(r.Limits, limitShown{Name: l.Name, Algorithm: l.Algorithm, Limit: l.Limit, Used: l.Used,
			Remaining: l.Remaining, ResetMs: l.Reset.Milliseconds(), RetryAfterMs: msOrNone(l.RetryAfter),
			DebtClearsMs: l.Clears.Milliseconds()})
		r.Denied = r.Denied || l.RetryAfter >= 0
	}
	return r, nil
}

// peekTier is the tier to peek with, as a request would name it: --tier
// for tiers from a header, the PART for tiers from a key part, and none
// (Redis names it) for tiers from Redis.
func (c *showCmd) peekTier(rule *config.Rule, parts []string) (string, error) {
	tiers := rule.TierNames()
	switch {
	case tiers == nil:
		if c.tier != "" {
			return "", fmt.Errorf("--tier: rule %s has no tiers", rule.Name)
		}
		return "", nil
	case rule.Tiers.From == config.TierFromKeyPart:
		if c.tier != "" {
			return "", fmt.Errorf("--tier: rule %s takes its tier from its key's part %d: the PART names it", rule.Name, rule.Tiers.KeyPart+1)
		}
		if v := parts[rule.Tiers.KeyPart]; slices.Contains(tiers, v) {
			return v, nil
		}
		return "", nil
	case rule.TiersFromRedis():
		if c.tier != "" {
			return "", fmt.Errorf("--tier: rule %s takes its tier from Redis (tier set assigns it)", rule.Name)
		}
		return "", nil
	}
	if c.tier != "" && !slices.Contains(tiers, c.tier) {
		return "", fmt.Errorf("--tier %q: rule %s's tiers are %s", c.tier, rule.Name, strings.Join(tiers, ", "))
	}
	return c.tier, nil
}

// peek calls the library's peek function, which charges nothing, and
// decodes its reply; then, for the limits it found exhausted, reads how far
// past their limits they are (keyspace.Debt).
func (s *session) peek(ctx context.Context, pk *keyspace.Peek, base string) (keyspace.KeyState, error) {
	reply, err := s.script(ctx, pk.Args)
	if err != nil {
		return keyspace.KeyState{}, fmt.Errorf("peek %s: %w", base, err)
	}
	st, err := pk.Decode(reply)
	if err != nil {
		return keyspace.KeyState{}, fmt.Errorf("peek %s: %w", base, err)
	}
	debt := keyspace.NewDebt(&st)
	if debt == nil {
		return st, nil
	}
	settled, err := s.script(ctx, debt.SettleArgs)
	if err != nil {
		return st, fmt.Errorf("reading the debt of %s: %w", base, err)
	}
	decided, err := s.script(ctx, debt.DecideArgs)
	if err != nil {
		return st, fmt.Errorf("reading the debt of %s: %w", base, err)
	}
	if err := debt.Apply(&st, settled, decided); err != nil {
		return st, fmt.Errorf("reading the debt of %s: %w", base, err)
	}
	return st, nil
}

// script runs a call of the filter's script as the filter calls it
// (FCALL, or EVALSHA then EVAL), args writing it for each, and returns
// its reply, an array of integers.
func (s *session) script(ctx context.Context, args func(algorithms.Invoke) []any) ([]int64, error) {
	inv := s.cfg.Redis.Command
	v, err := s.rdb.Do(ctx, args(inv)...).Result()
	if inv == algorithms.EvalSHA && redis.HasErrorPrefix(err, "NOSCRIPT") {
		v, err = s.rdb.Do(ctx, args(algorithms.Eval)...).Result()
	}
	if err != nil && strings.HasPrefix(err.Error(), "ERR Function not found") {
		return nil, fmt.Errorf("%w: the library %s is not loaded; run `ratelimitctl install`", err, lua.Library.Name)
	}
	if err != nil {
		return nil, err
	}
	items, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("the script answered %T, not an array", v)
	}
	reply := make([]int64, len(items))
	for i, it := range items {
		if reply[i], ok = it.(int64); !ok {
			return nil, fmt.Errorf("reply item %d is %T, not an integer", i, it)
		}
	}
	return reply, nil
}

// readKeys reads each key's value and TTL in one pipeline (the keys of one
// rule key share a slot); an absent key is nil.
func (s *session) readKeys(ctx context.Context, keys ...string) ([]*keyInfo, error) {
	gets := make([]*redis.StringCmd, len(keys))
	ttls := make([]*redis.DurationCmd, len(keys))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			gets[i], ttls[i] = p.Get(ctx, k), p.PTTL(ctx, k)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("reading %s: %w", strings.Join(keys, ", "), err)
	}
	infos := make([]*keyInfo, len(keys))
	for i, k := range keys {
		v, err := gets[i].Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("GET %s: %w", k, err)
		}
		ttl, err := ttls[i].Result()
		if err != nil {
			return nil, fmt.Errorf("PTTL %s: %w", k, err)
		}
		infos[i] = &keyInfo{Key: k, Value: v, TTLms: msOrNone(ttl)}
	}
	return infos, nil
}

func (r *shown) text(w *tabwriter.Writer) {
	fmt.Fprintf(w, "rule\t%s\n", r.Rule)
	fmt.Fprintf(w, "key\t%s\n", r.Key)
	block := "none"
	if r.Block != nil {
		block = "blocked, " + lasts(r.Block.TTLms, "block")
		if !r.manualBlock {
			block += " (ignored: the rule has manual_block: false)"
		}
	}
	fmt.Fprintf(w, "block\t%s\n", block)
	if r.tiers || r.AssignedTier != nil {
		var notes []string
		if r.OverrideApplied {
			notes = append(notes, "the override applies")
		}
		if r.AssignedTier != nil {
			notes = append(notes, fmt.Sprintf("assigned in Redis: %s, %s", r.AssignedTier.Value, lasts(r.AssignedTier.TTLms, "tier set")))
		} else if r.tiersFromRedis {
			notes = append(notes, "none assigned in Redis")
		}
		tier := orDash(r.Tier)
		if len(notes) > 0 {
			tier += " (" + strings.Join(notes, "; ") + ")"
		}
		fmt.Fprintf(w, "tier\t%s\n", tier)
	}
	if r.overrides || r.Override != nil {
		override := "none"
		if r.Override != nil {
			override = fmt.Sprintf("%s, %s", overrideLimits(r.Override.Value), lasts(r.Override.TTLms, "override set"))
		}
		fmt.Fprintf(w, "override\t%s\n", override)
	}
	if r.Blocked {
		fmt.Fprintf(w, "now\tdenied: blocked (limits are not read while blocked)\n")
		return
	}
	now := "allowed"
	var denying []string
	var retry int64
	for _, l := range r.Limits {
		if l.RetryAfterMs >= 0 {
			denying, retry = append(denying, l.Name), max(retry, l.RetryAfterMs)
		}
	}
	if len(denying) > 0 {
		now = fmt.Sprintf("denied by %s, retry after %s", strings.Join(denying, ", "), fmtMs(retry))
	}
	fmt.Fprintf(w, "now\t%s\n", now)
	for _, l := range r.Limits {
		if l.Remaining < 0 {
			fmt.Fprintf(w, "debt\t%s is %d over its limit: remaining back to 0 in %s, full in %s\n",
				l.Name, -l.Remaining, fmtMs(l.DebtClearsMs), fmtMs(l.ResetMs))
		}
	}
	from := "the rule's"
	switch {
	case r.OverrideApplied:
		from = "the override's"
	case r.Tier != "":
		from = "tier " + r.Tier + "'s"
	}
	fmt.Fprintf(w, "limits\t%s\n\n", from)
	fmt.Fprintf(w, "LIMIT\tALGORITHM\tLIMIT\tUSED\tREMAINING\tRESET\tRETRY AFTER\n")
	for _, l := range r.Limits {
		retry := "-"
		if l.RetryAfterMs >= 0 {
			retry = fmtMs(l.RetryAfterMs)
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%s\t%s\n", l.Name, l.Algorithm, l.Limit, l.Used, l.Remaining, fmtMs(l.ResetMs), retry)
	}
}

// msOrNone is d in milliseconds, keeping -1 (no TTL; would pass) as -1.
func msOrNone(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Milliseconds()
}

func fmtMs(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	if d >= 10*time.Second {
		d = d.Round(time.Second)
	}
	return d.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func ruleFlag(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "rule", "", "the rule's `name` (required)")
}

func needRule(rule string) error {
	if rule == "" {
		return usagef("--rule: required: the rule whose key this is")
	}
	return nil
}
