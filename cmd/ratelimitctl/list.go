package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
)

// listCmd is "list": one page of a SCAN over the key space of a rule (of
// every rule without --rule), grouped by rule key.
type listCmd struct {
	rule   string
	cursor string
	count  int
}

func (c *listCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.rule, "rule", "", "the rule's `name` (default: every rule)")
	fs.StringVar(&c.cursor, "cursor", "0", "go on from the `cursor` the previous page printed (default 0: the start)")
	fs.IntVar(&c.count, "count", 100, "end the page once it holds at least `N` Redis keys; also SCAN's COUNT (default 100)")
}

func (c *listCmd) check(args []string) error {
	if len(args) > 0 {
		return usagef("list takes no PART arguments, not %q", args[0])
	}
	if c.count < 1 {
		return usagef("--count %d: must be >= 1", c.count)
	}
	return nil
}

// listed is list's result: the keys of the configuration's rules found,
// in key order, and the cursor of the next page ("0": there is none).
// Elsewhere counts the rule keys of rules the configuration does not have
// (another configuration's, or a removed rule's) that share its prefix.
type listed struct {
	Keys      []listedKey `json:"keys"`
	Elsewhere []otherRule `json:"not_in_config,omitempty"`
	Cursor    string      `json:"cursor"`
	config    string
}

// otherRule is a rule the configuration lacks, and how many of its rule
// keys the page found.
type otherRule struct {
	Rule string `json:"rule"`
	Keys int    `json:"keys"`
}

// listedKey is one rule key and the keys of it the page found.
type listedKey struct {
	Rule  string       `json:"rule"`
	Parts []listedPart `json:"parts"`
	Key   string       `json:"key"`
	// State are the positions of the limit state keys found.
	State    []int `json:"state"`
	Block    bool  `json:"block"`
	Tier     bool  `json:"tier"`
	Override bool  `json:"override"`
	// Other are suffixes of keys this version does not know.
	Other []string `json:"other,omitempty"`
	// RedisKeys are the keys found, in the order SCAN returned them.
	RedisKeys []string `json:"redis_keys"`
}

// listedPart is a key part's value, decoded; a hashed part cannot be, and
// is its hash ("#" and 22 characters) with Hashed set.
type listedPart struct {
	Value  string `json:"value"`
	Hashed bool   `json:"hashed,omitempty"`
}

// cursor is a position in the scan: a master's index (0 for a single
// server) and its SCAN cursor.
type cursor struct {
	node int
	scan uint64
}

func (c *listCmd) parseCursor(cluster bool) (cursor, error) {
	if c.cursor == "0" {
		return cursor{}, nil
	}
	n, scan, hasNode := strings.Cut(c.cursor, ":")
	if !hasNode {
		scan = n
	}
	v, err := strconv.ParseUint(scan, 10, 64)
	if err != nil || hasNode != cluster {
		want := "a cursor printed by the previous page: a number"
		if cluster {
			want = "a cursor printed by the previous page: <master>:<cursor>"
		}
		return cursor{}, usagef("--cursor %q: want %s", c.cursor, want)
	}
	cur := cursor{scan: v}
	if hasNode {
		if cur.node, err = strconv.Atoi(n); err != nil || cur.node < 0 {
			return cursor{}, usagef("--cursor %q: bad master index %q", c.cursor, n)
		}
	}
	return cur, nil
}

func (c *listCmd) run(ctx context.Context, s *session, _ []string) (result, error) {
	cur, err := c.parseCursor(s.cluster != nil)
	if err != nil {
		return nil, err
	}
	match := globEscape(s.prefix) + "{*"
	if c.rule != "" {
		if _, ok := s.cfg.Rule(c.rule); !ok {
			return nil, fmt.Errorf("--rule: no rule %q in %s (its rules: %s)", c.rule, s.configPath, strings.Join(ruleNames(s.cfg), ", "))
		}
		// "{rule|": its request parts; "{rule}": none, or only call parts.
		match = globEscape(s.prefix) + "{" + globEscape(c.rule) + "[|}]*"
	}
	nodes, err := s.nodes(ctx)
	if err != nil {
		return nil, err
	}
	if cur.node >= len(nodes) {
		return nil, fmt.Errorf("--cursor %q: master %d of %d; the cluster changed since the previous page", c.cursor, cur.node, len(nodes))
	}
	seen := map[string]bool{}
	var found []string
	for len(found) < c.count {
		n := nodes[cur.node]
		keys, next, err := n.client.Scan(ctx, cur.scan, match, int64(c.count)).Result()
		if err != nil {
			return nil, fmt.Errorf("SCAN on %s: %w", n.addr, err)
		}
		for _, k := range keys {
			if !seen[k] {
				seen[k] = true
				found = append(found, k)
			}
		}
		cur.scan = next
		if next == 0 {
			if cur.node++; cur.node == len(nodes) {
				break
			}
		}
	}
	r := &listed{Keys: []listedKey{}, Cursor: "0", config: s.configPath}
	names := ruleNames(s.cfg)
	for _, k := range group(s.prefix, found) {
		switch i := slices.IndexFunc(r.Elsewhere, func(o otherRule) bool { return o.Rule == k.Rule }); {
		case slices.Contains(names, k.Rule):
			r.Keys = append(r.Keys, k)
		case i >= 0:
			r.Elsewhere[i].Keys++
		default:
			r.Elsewhere = append(r.Elsewhere, otherRule{k.Rule, 1})
		}
	}
	switch {
	case cur.node == len(nodes):
	case s.cluster != nil:
		r.Cursor = fmt.Sprintf("%d:%d", cur.node, cur.scan)
	default:
		r.Cursor = strconv.FormatUint(cur.scan, 10)
	}
	return r, nil
}

// group gathers keys by rule key, sorted by it; keys outside the key
// space (SCAN's MATCH cannot rule out every one) are left out.
func group(prefix string, keys []string) []listedKey {
	byBase := map[string]*listedKey{}
	var bases []string
	for _, k := range keys {
		rule, parts, suffix, ok := keyspace.SplitKey(prefix, k)
		if !ok {
			continue
		}
		base := strings.TrimSuffix(k, suffix)
		lk := byBase[base]
		if lk == nil {
			lk = &listedKey{Rule: rule, Key: base, State: []int{}}
			for _, p := range parts {
				v, hashed := keyspace.DecodePart(p)
				lk.Parts = append(lk.Parts, listedPart{v, hashed})
			}
			byBase[base] = lk
			bases = append(bases, base)
		}
		lk.RedisKeys = append(lk.RedisKeys, k)
		switch k {
		case keyspace.BlockKey(base):
			lk.Block = true
		case keyspace.TierKey(base):
			lk.Tier = true
		case keyspace.OverrideKey(base):
			lk.Override = true
		default:
			if i, err := strconv.Atoi(strings.TrimPrefix(suffix, ":")); err == nil && i >= 0 && keyspace.StateKey(base, i) == k {
				lk.State = append(lk.State, i)
			} else {
				lk.Other = append(lk.Other, suffix)
			}
		}
	}
	slices.Sort(bases)
	out := make([]listedKey, 0, len(bases))
	for _, b := range bases {
		lk := byBase[b]
		slices.Sort(lk.State)
		out = append(out, *lk)
	}
	return out
}

// globEscape escapes the characters special to SCAN's MATCH.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (r *listed) text(w *tabwriter.Writer) {
	fmt.Fprintf(w, "RULE\tPARTS\tHAS\n")
	for _, k := range r.Keys {
		parts := make([]string, len(k.Parts))
		for i, p := range k.Parts {
			parts[i] = showPart(p)
		}
		var has []string
		if len(k.State) > 0 {
			pos := make([]string, len(k.State))
			for i, p := range k.State {
				pos[i] = strconv.Itoa(p)
			}
			has = append(has, "state "+strings.Join(pos, ","))
		}
		for _, x := range []struct {
			on   bool
			name string
		}{{k.Block, "block"}, {k.Tier, "tier"}, {k.Override, "override"}} {
			if x.on {
				has = append(has, x.name)
			}
		}
		for _, o := range k.Other {
			has = append(has, "other "+o)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", k.Rule, strings.Join(parts, " "), strings.Join(has, ", "))
	}
	if len(r.Elsewhere) > 0 {
		var others []string
		for _, o := range r.Elsewhere {
			plural := "s"
			if o.Keys == 1 {
				plural = ""
			}
			others = append(others, fmt.Sprintf("%s (%d key%s)", o.Rule, o.Keys, plural))
		}
		fmt.Fprintf(w, "\nnot in %s\t%s: rules of another configuration sharing its key prefix, or removed\n",
			r.config, strings.Join(others, ", "))
	}
	fmt.Fprintf(w, "\nnext cursor\t%s", r.Cursor)
	if r.Cursor == "0" {
		fmt.Fprintf(w, " (done)")
	}
	fmt.Fprintln(w)
}

// showPart prints a part so that parts separated by spaces read back:
// a decoded value is quoted when it is empty, holds a space, a quote or
// anything unprintable, or starts with "#", as a hashed part (shown as it
// is) does.
func showPart(p listedPart) string {
	if p.Hashed {
		return p.Value
	}
	if p.Value == "" || strings.HasPrefix(p.Value, "#") || strings.ContainsFunc(p.Value, func(r rune) bool {
		return r == '"' || r == '\\' || unicode.IsSpace(r) || !unicode.IsPrint(r)
	}) {
		return strconv.Quote(p.Value)
	}
	return p.Value
}
