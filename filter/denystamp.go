package filter

import "github.com/redisrate/envoy-redis-ratelimit/filter/config"

// A deny-cache entry answers at the first rule whose key it holds, before
// the request's other rules are decided, so its RateLimit-Policy would
// list that rule alone. The fresh denial that stored it stamps it with its
// own policy, every enforced rule it decided, and those rules' keys; a
// cached denial repeats that policy only to a request that shares them.

// stampedRule is a rule a stamped policy lists: its index, the stamping
// request's key of it and its local tier (see Stream.localTier).
type stampedRule struct {
	rule, tier int
	key        string
}

// stampDenials gives the deny-cache entries this request stored the
// RateLimit-Policy of its denial v, and the rules it lists, once.
func (s *Stream) stampDenials(v *verdict) {
	if len(s.denyStored) == 0 || v.reason != reasonRateLimited || s.pol.cfg.Headers == config.HeadersNone {
		return
	}
	policy, rules := s.policyHeader(v), s.stampedRules()
	for _, r := range s.denyStored {
		r.policy, r.rules = policy, rules
	}
}

// stampedRules lists the rules this request enforced, each with its key,
// as its calls hold it.
func (s *Stream) stampedRules() []stampedRule {
	cfg := s.pol.cfg
	rules := make([]stampedRule, 0, len(s.enforced))
	for _, e := range s.enforced {
		sr := stampedRule{rule: e.rule, tier: s.localTier(&cfg.Rules[e.rule], cfg.TrustedHops)}
	find:
		for _, c := range s.calls {
			for i := range c.origins {
				if c.origins[i].rule == e.rule {
					sr.key = c.origins[i].ruleKey
					break find
				}
			}
		}
		rules = append(rules, sr)
	}
	return rules
}

// cachedPolicy is the RateLimit-Policy a cached denial r at rule ri shows:
// r's stamp when this request shares each other rule it lists (matched on
// its headers, with the same key and local tier), else "" (ri's own). A
// rule that reads the body is not matched again here: "" then.
func (s *Stream) cachedPolicy(r *denyReply, ri int) string {
	if r.policy == "" {
		return ""
	}
	cfg := s.pol.cfg
	for _, sr := range r.rules {
		if sr.rule == ri {
			continue
		}
		rule := &cfg.Rules[sr.rule]
		if sr.key == "" || rule.ReadsBody() || !matchesHead(&rule.Match, &s.req) {
			return ""
		}
		var ok bool
		s.stampKey, ok = appendRuleKey(s.stampKey[:0], cfg.Redis.Prefix, rule, &s.req, cfg.TrustedHops)
		if !ok || string(s.stampKey) != sr.key || s.localTier(rule, cfg.TrustedHops) != sr.tier {
			return ""
		}
	}
	return r.policy
}
