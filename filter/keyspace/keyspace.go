// Package keyspace is the filter's Redis key space, as the filter writes it
// and ratelimitctl reads it: a rule's key from key-part values (RuleKey,
// AppendPart, Canonical), the keys that extend it (StateKey, BlockKey,
// TierKey, OverrideKey), the epoch key, SplitKey and DecodePart to read
// keys back, Peek, the script call that reads one key's state without
// charging it, Debt, the calls that read how far past their limits it
// is, and AppendQuotaJSON, a key's state as the quota endpoint answers it.
package keyspace

import (
	"strconv"
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
)

// The key space, as the filter writes it and ratelimitctl reads it. A rule
// key ("base") is "<prefix>{<rule>|<part>|...}" (see filter's appendRuleKey); its
// keys extend it:
//
//	<base>:<i>          the state of the rule's limit at position i
//	<base>:block        an operator's block
//	<base>:tier         the tier an operator assigned (tiers from redis)
//	<base>:override     an operator's limits for this key (overrides: true)
//	<prefix>epoch       bumped on every operator change; each VM polls it
//	                    and drops its deny cache when it moves
const (
	BlockSuffix    = ":block"
	TierSuffix     = ":tier"
	OverrideSuffix = ":override"
	epochName      = "epoch"
)

// RuleKey returns the key of rule, a rule of c, for the given key-part values, one per part
// of the rule's key in order, encoded as the filter encodes a request's,
// after the same normalization (a client address is grouped by its
// configured prefix length). A part a request lacks under
// on_missing_key: shared is the empty string. A rule with call parts (a
// jsonrpc rule's {"source":"call"}) keys "<prefix>{<rule>|<request
// parts>}|<call parts>}": the hash tag holds only the request's parts.
func RuleKey(c *config.Config, rule *config.Rule, parts []string) (string, error) {
	if len(parts) != len(rule.Key) {
		return "", format.Errorf("rule %s: %d key parts given, its key has %d", rule.Name, len(parts), len(rule.Key))
	}
	b := append([]byte(c.Redis.Prefix), '{')
	b, err := appendParts(append(b, rule.Name...), rule, parts, false)
	if err != nil {
		return "", err
	}
	b = append(b, '}')
	if rule.HasCallParts() {
		if b, err = appendParts(b, rule, parts, true); err != nil {
			return "", err
		}
		b = append(b, '}')
	}
	return string(b), nil
}

// appendParts appends "|<part>" for each of the rule's call parts (calls),
// or each of its other parts, in configured order.
func appendParts(b []byte, rule *config.Rule, parts []string, calls bool) ([]byte, error) {
	for i, p := range rule.Key {
		if (p.Source == config.SourceCall) != calls {
			continue
		}
		v, err := Canonical(&p, parts[i])
		if err != nil {
			return b, format.Errorf("rule %s: key part %d (%s): %w", rule.Name, i, p.Source, err)
		}
		b = AppendPart(append(b, '|'), v)
	}
	return b, nil
}

// StateKey is the key of the state of a rule's limit at position i.
func StateKey(base string, i int) string { return base + ":" + strconv.Itoa(i) }

// BlockKey is the key whose existence blocks base.
func BlockKey(base string) string { return base + BlockSuffix }

// TierKey holds the tier an operator assigned to base.
func TierKey(base string) string { return base + TierSuffix }

// OverrideKey holds an operator's limits for base.
func OverrideKey(base string) string { return base + OverrideSuffix }

// EpochKey is the counter an operator's change bumps, so that every VM
// drops its deny cache (see filter's Plugin.pollEpoch).
func EpochKey(prefix string) string { return prefix + epochName }

// SplitKey parses a key of the key space: its rule, its key parts (as
// encoded: see DecodePart), request parts then call parts, and what
// follows the rule key (":0", ":block" ...). ok is false for a key
// outside prefix's key space.
func SplitKey(prefix, key string) (rule string, parts []string, suffix string, ok bool) {
	rest, found := strings.CutPrefix(key, prefix+"{")
	if !found {
		return "", nil, "", false
	}
	end, last := strings.IndexByte(rest, '}'), strings.LastIndexByte(rest, '}')
	if end < 0 {
		return "", nil, "", false
	}
	fields := strings.Split(rest[:end], "|")
	if last > end { // "}|<call parts>}"
		calls, found := strings.CutPrefix(rest[end+1:last], "|")
		if !found {
			return "", nil, "", false
		}
		fields = append(fields, strings.Split(calls, "|")...)
	}
	return fields[0], fields[1:], rest[last+1:], true
}

// DecodePart undoes AppendPart's percent-encoding. A hashed part
// ("#" and 22 base64url characters) cannot be undone and is returned as
// it is, with hashed set.
func DecodePart(p string) (v string, hashed bool) {
	if strings.HasPrefix(p, "#") {
		return p, true
	}
	if !strings.Contains(p, "%") {
		return p, false
	}
	b := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+2 < len(p) {
			if n, err := strconv.ParseUint(p[i+1:i+3], 16, 8); err == nil {
				b = append(b, byte(n))
				i += 2
				continue
			}
		}
		b = append(b, p[i])
	}
	return string(b), false
}
