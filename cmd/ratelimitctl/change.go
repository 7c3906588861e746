package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
)

// The commands that change a key: each deletes or writes its keys, then
// bumps the epoch so that every VM drops its deny cache, and reports what
// it did, and what it could not do (see apply).

// changed is a change's result.
type changed struct {
	Command string   `json:"command"`
	Rule    string   `json:"rule"`
	Parts   []string `json:"parts"`
	Key     string   `json:"key"`
	// Set is the key written, with its value and TTL; Limits, for an
	// override, the limits it holds as they were given.
	Set    *keyInfo `json:"set,omitempty"`
	Limits string   `json:"limits,omitempty"`
	// Deleted are the keys deleted; Absent those to delete that did not
	// exist; Kept the key's block, tier and override that reset left.
	Deleted []string `json:"deleted"`
	Absent  []string `json:"absent"`
	Kept    []string `json:"kept,omitempty"`
	// Epoch is the epoch key's value after the bump, 0 when it was not
	// bumped (the error says why).
	EpochKey string `json:"epoch_key"`
	Epoch    int64  `json:"epoch"`
}

func (c *changed) text(w *tabwriter.Writer) {
	if c.Set != nil {
		value := c.Set.Value
		if c.Limits != "" {
			value = c.Limits
		}
		fmt.Fprintf(w, "set\t%s = %s, %s\n", c.Set.Key, value, lasts(c.Set.TTLms, c.Command))
	}
	for _, k := range c.Deleted {
		fmt.Fprintf(w, "deleted\t%s\n", k)
	}
	for _, k := range c.Absent {
		fmt.Fprintf(w, "absent\t%s\n", k)
	}
	for _, k := range c.Kept {
		fmt.Fprintf(w, "kept\t%s (reset --all deletes it)\n", k)
	}
	if c.Epoch == 0 {
		fmt.Fprintf(w, "epoch\t%s not bumped\n", c.EpochKey)
		return
	}
	fmt.Fprintf(w, "epoch\t%s = %d\n", c.EpochKey, c.Epoch)
}

// done reports whether the change did anything, so that its result is
// printed beside the error that says what it could not do.
func (c *changed) done() bool { return c.Set != nil || len(c.Deleted) > 0 || c.Epoch != 0 }

// lasts says how long a key set by cmd lasts: its TTL, or, without one,
// until the command that removes it.
func lasts(ttlMs int64, cmd string) string {
	if ttlMs >= 0 {
		return "expires in " + fmtMs(ttlMs)
	}
	undo := map[string]string{"block": "unblock", "tier set": "tier clear", "override set": "override clear"}[cmd]
	return "no expiry: until `ratelimitctl " + undo + "`"
}

// apply deletes del, then sets key to value (when key is not ""), then
// bumps the epoch, recording in c what it did. Deletes come first: a Redis
// full under maxmemory (noeviction) refuses a SET, never a DEL, which
// frees memory. Its error says what was not done, and what that leaves:
// with the epoch not bumped, proxies' deny caches keep denying for up to
// stale (see staleFor).
func (s *session) apply(ctx context.Context, c *changed, key, value string, ttl time.Duration, del []string, stale string) error {
	c.Deleted, c.Absent, c.EpochKey = []string{}, []string{}, keyspace.EpochKey(s.prefix)
	if len(del) > 0 {
		cmds := make([]*redis.IntCmd, len(del))
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range del {
				cmds[i] = p.Del(ctx, k)
			}
			return nil
		})
		for i, k := range del {
			switch n, derr := cmds[i].Result(); {
			case derr != nil:
			case n > 0:
				c.Deleted = append(c.Deleted, k)
			default:
				c.Absent = append(c.Absent, k)
			}
		}
		if err != nil {
			return fmt.Errorf("%s: DEL %s: %w; %s.", c.Command, strings.Join(del, " "), err, c.summary())
		}
	}
	if key != "" {
		if err := s.rdb.Set(ctx, key, value, ttl).Err(); err != nil {
			return fmt.Errorf("%s: SET %s: %w. Nothing was changed.%s", c.Command, key, err, fullHint(err))
		}
		c.Set = &keyInfo{Key: key, Value: value, TTLms: msOrNone(ttl)}
		if ttl == 0 {
			c.Set.TTLms = -1
		}
	}
	n, err := s.bumpEpoch(ctx)
	if err != nil {
		return fmt.Errorf("%s: %s. The epoch was not bumped: %w. %s%s", c.Command, c.summary(), err, stale, fullHint(err))
	}
	c.Epoch = n
	return nil
}

// summary says what a change did, for an error that says what it did not.
func (c *changed) summary() string {
	var did []string
	if c.Set != nil {
		did = append(did, "set "+c.Set.Key)
	}
	if len(c.Deleted) > 0 {
		did = append(did, fmt.Sprintf("deleted %d key(s): %s", len(c.Deleted), strings.Join(c.Deleted, " ")))
	}
	if len(c.Absent) > 0 {
		did = append(did, fmt.Sprintf("%d key(s) were absent: %s", len(c.Absent), strings.Join(c.Absent, " ")))
	}
	if len(did) == 0 {
		return "nothing was deleted"
	}
	return strings.Join(did, "; ")
}

// fullHint explains Redis's OOM error: Redis is full.
func fullHint(err error) string {
	if !redis.HasErrorPrefix(err, "OOM") {
		return ""
	}
	return " Redis is full under maxmemory: raise maxmemory or free memory (reset and the clear commands delete keys, " +
		"which a full Redis allows)."
}

func newChange(cmd string, rule *config.Rule, parts []string, base string) *changed {
	return &changed{Command: cmd, Rule: rule.Name, Parts: parts, Key: base}
}

// resetCmd is "reset": the key's limit state goes, so its limits start
// afresh; its block, tier and override stay unless --all.
type resetCmd struct {
	rule string
	all  bool
}

func (c *resetCmd) flags(fs *flag.FlagSet) {
	ruleFlag(fs, &c.rule)
	fs.BoolVar(&c.all, "all", false, "also delete the key's block, tier and override")
}

func (c *resetCmd) check([]string) error { return needRule(c.rule) }

func (c *resetCmd) run(ctx context.Context, s *session, parts []string) (result, error) {
	rule, base, err := s.target(c.rule, parts)
	if err != nil {
		return nil, err
	}
	var del []string
	for i := range rule.Positions() {
		del = append(del, keyspace.StateKey(base, i))
	}
	others := []string{keyspace.BlockKey(base), keyspace.TierKey(base), keyspace.OverrideKey(base)}
	if c.all {
		del = append(del, others...)
	}
	ch := newChange("reset", rule, parts, base)
	if err := s.apply(ctx, ch, "", "", 0, del, staleFor(rule, s.overrideOf(ctx, rule, base))); err != nil {
		return ch, err
	}
	if !c.all {
		kept, err := s.readKeys(ctx, others...)
		if err != nil {
			return nil, err
		}
		for _, k := range kept {
			if k != nil {
				ch.Kept = append(ch.Kept, k.Key)
			}
		}
	}
	return ch, nil
}

// ttlFlag is --ttl: a duration of at least 1ms; zero (not given) is no TTL.
type ttlFlag struct{ d time.Duration }

func (t *ttlFlag) String() string {
	if t == nil || t.d == 0 {
		return ""
	}
	return t.d.String()
}

func (t *ttlFlag) Set(v string) error {
	d, err := config.ParseDuration(v)
	if err != nil {
		return errors.New("want a duration such as 90s, 10m, 24h, 7d or 2w")
	}
	if d < time.Millisecond {
		return errors.New("must be at least 1ms (leave --ttl out for no TTL)")
	}
	t.d = d
	return nil
}

// blockValue is what a block key holds; the filter only checks that it
// exists.
const blockValue = "1"

// blockCmd is "block".
type blockCmd struct {
	rule string
	ttl  ttlFlag
}

func (c *blockCmd) flags(fs *flag.FlagSet) {
	ruleFlag(fs, &c.rule)
	fs.Var(&c.ttl, "ttl", "how long the block lasts, a `duration` such as 30m, 12h, 7d or 2w (default: no expiry, until unblock)")
}

func (c *blockCmd) check([]string) error { return needRule(c.rule) }

func (c *blockCmd) run(ctx context.Context, s *session, parts []string) (result, error) {
	rule, base, err := s.target(c.rule, parts)
	if err != nil {
		return nil, err
	}
	if !rule.ManualBlock {
		return nil, fmt.Errorf("--rule: rule %s has manual_block: false, so the filter never reads its block key", rule.Name)
	}
	ch := newChange("block", rule, parts, base)
	return ch, s.apply(ctx, ch, keyspace.BlockKey(base), blockValue, c.ttl.d, nil,
		"No proxy is misled: every request not already denied reads the block from Redis.")
}

// deleteCmd deletes one of the key's operator keys: "unblock" (what:
// block), "tier clear" and "override clear".
type deleteCmd struct {
	what string
	rule string
}

func (c *deleteCmd) flags(fs *flag.FlagSet) { ruleFlag(fs, &c.rule) }

func (c *deleteCmd) check([]string) error { return needRule(c.rule) }

func (c *deleteCmd) run(ctx context.Context, s *session, parts []string) (result, error) {
	rule, base, err := s.target(c.rule, parts)
	if err != nil {
		return nil, err
	}
	key, cmd := keyspace.BlockKey(base), "unblock"
	switch c.what {
	case "tier":
		key, cmd = keyspace.TierKey(base), "tier clear"
	case "override":
		key, cmd = keyspace.OverrideKey(base), "override clear"
	}
	stale := staleFor(rule, s.overrideOf(ctx, rule, base))
	if c.what == "block" {
		k, err := s.current(ctx, key)
		if err != nil {
			return nil, err
		}
		stale = staleBlock(0)
		if k != nil && k.TTLms > 0 {
			stale = staleBlock(time.Duration(k.TTLms) * time.Millisecond)
		}
	}
	ch := newChange(cmd, rule, parts, base)
	return ch, s.apply(ctx, ch, "", "", 0, []string{key}, stale)
}

// tierSetCmd is "tier set".
type tierSetCmd struct {
	rule, tier string
	ttl        ttlFlag
}

func (c *tierSetCmd) flags(fs *flag.FlagSet) {
	ruleFlag(fs, &c.rule)
	fs.StringVar(&c.tier, "tier", "", "the `tier` to assign, one of the rule's (required)")
	fs.Var(&c.ttl, "ttl", "how long the tier lasts, a `duration` such as 30m, 12h, 7d or 2w (default: no expiry, until tier clear)")
}

func (c *tierSetCmd) check([]string) error {
	if c.tier == "" {
		return usagef("--tier: required: the tier to assign")
	}
	return needRule(c.rule)
}

func (c *tierSetCmd) run(ctx context.Context, s *session, parts []string) (result, error) {
	rule, base, err := s.target(c.rule, parts)
	if err != nil {
		return nil, err
	}
	tiers := rule.TierNames()
	switch {
	case tiers == nil:
		return nil, fmt.Errorf("--rule: rule %s has no tiers", rule.Name)
	case !rule.TiersFromRedis():
		return nil, fmt.Errorf("--rule: rule %s takes its tier from a request header, not from Redis", rule.Name)
	case !slices.Contains(tiers, c.tier):
		return nil, fmt.Errorf("--tier %q: rule %s's tiers are %s", c.tier, rule.Name, strings.Join(tiers, ", "))
	}
	ch := newChange("tier set", rule, parts, base)
	return ch, s.apply(ctx, ch, keyspace.TierKey(base), c.tier, c.ttl.d, nil, staleFor(rule, s.overrideOf(ctx, rule, base)))
}

// overrideSetCmd is "override set".
type overrideSetCmd struct {
	rule, limits string
	ttl          ttlFlag
}

func (c *overrideSetCmd) flags(fs *flag.FlagSet) {
	ruleFlag(fs, &c.rule)
	fs.StringVar(&c.limits, "limits", "", "the key's limits: a `JSON` array of limits, as in the rule's \"limits\" (required)")
	fs.Var(&c.ttl, "ttl", "how long the override lasts, a `duration` such as 30m, 12h, 7d or 2w (default: no expiry, until override clear)")
}

func (c *overrideSetCmd) check([]string) error {
	if c.limits == "" {
		return usagef("--limits: required: a JSON array of limits")
	}
	return needRule(c.rule)
}

func (c *overrideSetCmd) run(ctx context.Context, s *session, parts []string) (result, error) {
	rule, base, err := s.target(c.rule, parts)
	if err != nil {
		return nil, err
	}
	if !rule.OverridesEnabled() {
		return nil, fmt.Errorf("--rule: rule %s does not take overrides", rule.Name)
	}
	value, err := config.ParseOverride(rule, []byte(c.limits))
	if err != nil {
		return nil, fmt.Errorf("--limits: %w", err)
	}
	ch := newChange("override set", rule, parts, base)
	ch.Limits = compactJSON(c.limits)
	return ch, s.apply(ctx, ch, keyspace.OverrideKey(base), value, c.ttl.d, nil, staleFor(rule, s.overrideOf(ctx, rule, base)))
}
