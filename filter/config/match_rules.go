package config

import (
	"slices"
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

// Higress's matchRules. Higress's controller turns the matchRules of a
// WasmPlugin into a _rules_ list inside the plugin configuration
// (alibaba/higress, pkg/ingress/config/ingress_config.go,
// convertIstioWasmPlugin): each entry is one rule's config, with the lists
// _match_route_ (from ingress), _match_domain_ and _match_service_ beside
// it. Higress's Go SDK (higress-group/wasm-go, pkg/matcher/rule_matcher.go)
// also reads _match_route_prefix_, and one of its revisions
// _match_consumer_. An entry's config replaces the top-level one; it is not
// merged into it (Higress's own rate-limit plugins parse it that way).

const rulesKey = "_rules_"

// The match keys of a _rules_ entry.
const (
	matchRoute       = "_match_route_"
	matchRoutePrefix = "_match_route_prefix_"
	matchConsumer    = "_match_consumer_"
	matchDomain      = "_match_domain_"
	matchService     = "_match_service_"
)

var matchKeys = []string{matchRoute, matchRoutePrefix, matchConsumer, matchDomain, matchService}

// MatchRule is one entry of _rules_: the configuration that applies,
// instead of the top-level one, to the requests its lists select. Which
// lists count follows Higress: Routes (with Services, both must match),
// else Domains, else Services, else RoutePrefixes (with Consumers, both
// must match). Parse refuses any other combination, since Higress
// would silently ignore a list.
type MatchRule struct {
	// Routes are route names (the route_name property), matched exactly.
	// Higress names an Ingress's routes "<namespace>/<name>", or "<name>"
	// in its own namespace.
	Routes []string
	// RoutePrefixes match the start of the route name.
	RoutePrefixes []string
	// Consumers are values of the x-mse-consumer header, which Higress's
	// authentication plugins set.
	Consumers []string
	// Domains match :authority without its port, in lower case: exactly,
	// or with "*" as the first ("*.example.com") or last ("api.*")
	// character, or "*" alone for every host.
	Domains []string
	// Services match the cluster_name property, outbound|<port>||<fqdn>,
	// by "<fqdn>" or "<fqdn>:<port>".
	Services []string
	// Config is the entry's own configuration.
	Config *Config
}

// splitFields returns object v without the named keys, and their values
// (Exists() is false for a key v lacks).
func splitFields(v jsonvalue.Value, path string, names ...string) (jsonvalue.Value, []jsonvalue.Value, error) {
	found := make([]jsonvalue.Value, len(names))
	hit := false
	var err error
	v.ForEach(func(k, val jsonvalue.Value) bool {
		if i := slices.Index(names, k.String()); i >= 0 {
			if found[i].Exists() {
				err = errAt(joinPath(path, names[i]), "duplicate field")
				return false
			}
			found[i], hit = val, true
		}
		return true
	})
	if err != nil || !hit {
		return v, found, err
	}
	var b strings.Builder
	b.WriteByte('{')
	v.ForEach(func(k, val jsonvalue.Value) bool {
		if !slices.Contains(names, k.String()) {
			if b.Len() > 1 {
				b.WriteByte(',')
			}
			b.WriteString(k.Raw)
			b.WriteByte(':')
			b.WriteString(val.Raw)
		}
		return true
	})
	b.WriteByte('}')
	return jsonvalue.Parse(b.String()), found, nil
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// within puts a configuration's field errors under path, e.g.
// "rules[0].name" becomes "_rules_[1].rules[0].name".
func within(path string, err error) error {
	if fe, ok := err.(*fieldError); ok {
		return &fieldError{path: path + "." + fe.path, err: fe.err, msg: fe.msg}
	}
	return err
}

// parseWithMatchRules parses a configuration that has _rules_: rest is the
// top level without it, empty when the top level holds only _rules_.
func parseWithMatchRules(rest, rules jsonvalue.Value) (*Config, error) {
	if !rules.IsArray() || len(rules.Array()) == 0 {
		return nil, errAt(rulesKey, "must be a non-empty array of objects")
	}
	var top *Config
	if rest.Raw != "{}" {
		var err error
		if top, err = parseConfig(rest); err != nil {
			return nil, err
		}
	}
	var entries []MatchRule
	for i, e := range rules.Array() {
		mr, err := parseMatchRule(e, elem(rulesKey, i))
		if err != nil {
			return nil, err
		}
		entries = append(entries, mr)
	}
	if top == nil {
		// Nothing is limited unless an entry matches; the top level only
		// carries the Redis client that every entry shares.
		c := *entries[0].Config
		c.Rules, c.DenyCacheKeys, c.Quota = nil, 0, nil
		top = &c
	}
	top.MatchRules = entries
	if err := checkSharedParts(top); err != nil {
		return nil, err
	}
	return top, nil
}

func parseMatchRule(e jsonvalue.Value, path string) (MatchRule, error) {
	var mr MatchRule
	if !e.IsObject() {
		return mr, errAt(path, "must be an object")
	}
	rest, m, err := splitFields(e, path, matchKeys...)
	if err != nil {
		return mr, err
	}
	lists := make([][]string, len(matchKeys))
	for i, key := range matchKeys {
		if lists[i], err = nonEmptyStrings(m[i], path+"."+key); err != nil {
			return mr, err
		}
	}
	mr.Routes, mr.RoutePrefixes, mr.Consumers, mr.Domains, mr.Services = lists[0], lists[1], lists[2], lists[3], lists[4]
	if err := checkMatchLists(&mr, path); err != nil {
		return mr, err
	}
	for i, d := range mr.Domains {
		if strings.Contains(strings.Trim(d, "*"), "*") || d != "*" && strings.HasPrefix(d, "*") && strings.HasSuffix(d, "*") {
			return mr, errAt(format.Sprintf("%s.%s[%d]", path, matchDomain, i), `"*" may only be the first or the last character`)
		}
		mr.Domains[i] = strings.ToLower(d)
	}
	if mr.Config, err = parseConfig(rest); err != nil {
		return mr, within(path, err)
	}
	return mr, nil
}

// checkMatchLists refuses an entry without a list Higress matches on, and
// lists Higress would ignore beside the one it uses.
func checkMatchLists(mr *MatchRule, path string) error {
	present := func(l []string) bool { return len(l) > 0 }
	var used string
	var ignored []string
	switch {
	case present(mr.Routes):
		used, ignored = matchRoute, []string{matchRoutePrefix, matchConsumer, matchDomain}
	case present(mr.Domains):
		used, ignored = matchDomain, []string{matchRoutePrefix, matchConsumer, matchService}
	case present(mr.Services):
		used, ignored = matchService, []string{matchRoutePrefix, matchConsumer}
	case present(mr.RoutePrefixes):
		return nil
	case present(mr.Consumers):
		return errAt(path+"."+matchConsumer, "only allowed with %s", matchRoutePrefix)
	default:
		return errAt(path, "needs one of %s, %s, %s or %s", matchRoute, matchDomain, matchService, matchRoutePrefix)
	}
	lists := map[string][]string{matchRoutePrefix: mr.RoutePrefixes, matchConsumer: mr.Consumers, matchDomain: mr.Domains, matchService: mr.Services}
	for _, key := range ignored {
		if present(lists[key]) {
			return errAt(path+"."+key, "not allowed with %s: Higress would ignore it; give it its own entry", used)
		}
	}
	return nil
}

// nonEmptyStrings reads an optional non-empty array of non-empty strings.
func nonEmptyStrings(v jsonvalue.Value, path string) ([]string, error) {
	list, err := strList(v, path)
	if err == nil && v.Exists() && (len(list) == 0 || slices.Contains(list, "")) {
		err = errAt(path, "must be a non-empty array of non-empty strings")
	}
	return list, err
}

// checkSharedParts checks what the configurations of one plugin share: one
// Redis client, so one redis object; and Redis keys and metrics named
// after rules, so a rule name used in several configurations must have the
// same limits and the same key parts in each: with x-user in one and
// client_ip in the other, a user could name a client's address and spend
// its quota.
func checkSharedParts(top *Config) error {
	type seen struct {
		path string
		rule *Rule
		hops int // the configuration's TrustedHops
	}
	byName, byMetric := map[string]seen{}, map[string]seen{}
	check := func(c *Config, at string) error {
		for i := range c.Rules {
			r, path := &c.Rules[i], elem(at+"rules", i)
			if s, ok := byName[r.Name]; ok && !sameLimits(s.rule, r) {
				return errAt(path+".limits", "rule %q has other limits in %s; its name names its Redis keys, so they must be the same", r.Name, s.path)
			} else if ok && !sameKey(s.rule, r) {
				return errAt(path+".key", "rule %q has other key parts in %s; its name names its Redis keys, so requests the two tell apart would share a key", r.Name, s.path)
			} else if ok && s.hops != c.TrustedHops && readsClientIP(r) {
				return errAt(path+".key", "rule %q reads client_ip with other xff_trusted_hops in %s; its name names its Redis keys, so one client would have two keys", r.Name, s.path)
			} else if !ok {
				byName[r.Name] = seen{path, r, c.TrustedHops}
			}
			// The configurations share metrics, so names must not collide
			// across them either (within one, checkRuleNames said so).
			metric := prometheusName(r.Name)
			if s, ok := byMetric[metric]; ok && s.rule.Name != r.Name {
				return errAt(path+".name", "%q and %s.name %q give the same Prometheus metric names (%s): \".\" and \"-\" become \"_\"",
					r.Name, s.path, s.rule.Name, prometheusName(RuleMetricName(r.Name, OutcomeAllowed)))
			} else if !ok {
				byMetric[metric] = seen{path, r, c.TrustedHops}
			}
		}
		return nil
	}
	if err := check(top, ""); err != nil {
		return err
	}
	for i := range top.MatchRules {
		at := elem(rulesKey, i) + "."
		c := top.MatchRules[i].Config
		if !c.Redis.Equal(&top.Redis) {
			return errAt(at+"redis", "must be the same in every configuration of the plugin, which has one Redis client")
		}
		if err := check(c, at); err != nil {
			return err
		}
	}
	return nil
}

// sameLimits reports whether two rules of one name decide alike: the same
// limits, tiers and overrides.
func sameLimits(a, b *Rule) bool {
	if !slices.Equal(a.Limits, b.Limits) || a.Overrides != b.Overrides || (a.Tiers == nil) != (b.Tiers == nil) {
		return false
	}
	if a.Tiers == nil {
		return true
	}
	x, y := a.Tiers, b.Tiers
	return x.From == y.From && x.Header == y.Header && x.KeyPart == y.KeyPart &&
		slices.EqualFunc(x.Levels, y.Levels, func(p, q TierLimits) bool { return p.Name == q.Name && slices.Equal(p.Limits, q.Limits) })
}

// sameKey reports whether two rules of one name build the same key from a
// request: the same parts, in order, each with every field that changes
// what it reads or how (source, name, value, property or claim path, and
// network prefix lengths).
func sameKey(a, b *Rule) bool {
	return slices.EqualFunc(a.Key, b.Key, func(p, q KeyPart) bool {
		return p.Source == q.Source && p.Name == q.Name && p.Value == q.Value && slices.Equal(p.Path, q.Path) &&
			p.IPv4Prefix == q.IPv4Prefix && p.IPv6Prefix == q.IPv6Prefix && p.ClaimPath == q.ClaimPath
	})
}

// readsClientIP reports whether a rule's key has a client_ip part, whose
// value depends on the configuration's xff_trusted_hops.
func readsClientIP(r *Rule) bool {
	return slices.ContainsFunc(r.Key, func(p KeyPart) bool { return p.Source == SourceClientIP })
}

// Rule returns the rule of that name, among the top-level rules and then
// those of each _rules_ entry.
func (c *Config) Rule(name string) (*Rule, bool) {
	for i := range c.Rules {
		if c.Rules[i].Name == name {
			return &c.Rules[i], true
		}
	}
	for i := range c.MatchRules {
		if r, ok := c.MatchRules[i].Config.Rule(name); ok {
			return r, true
		}
	}
	return nil, false
}
