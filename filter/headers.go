package filter

import (
	"strconv"
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/headerparts"
)

// The rate-limit response headers: RateLimit-Policy and RateLimit (IETF
// draft 10) and X-RateLimit-*, from pieces each policy renders once per
// rule and tier (package headerparts).

// limitName is the quoted name the headers give v's limit.
func (p *policy) limitName(v *verdict) string {
	h := &p.headers[v.rule]
	if v.tier == tierOverride {
		return h.Positions[v.limit]
	}
	return h.Levels[v.tier].Names[v.limit]
}

// limitQuota is v's limit's quota, as X-RateLimit-Limit shows it.
func (p *policy) limitQuota(v *verdict) string {
	if v.tier == tierOverride {
		q, _ := v.lim.Policy()
		return strconv.FormatInt(q, 10)
	}
	return p.headers[v.rule].Levels[v.tier].Quotas[v.limit]
}

// rulePolicy is the RateLimit-Policy value of an enforced rule.
func (p *policy) rulePolicy(e enforcedRule) string {
	if e.tier == tierOverride {
		return e.policy
	}
	return p.headers[e.rule].Levels[max(e.tier, 0)].Policy
}

// appendRateLimitHeaders renders v in the configured header style, with
// policy as RateLimit-Policy ("": policyHeader's).
func (s *Stream) appendRateLimitHeaders(h [][2]string, v *verdict, policy string) [][2]string {
	style := s.pol.cfg.Headers
	if style == config.HeadersNone {
		return h
	}
	r := v.result
	t := r.ResetAfter
	if !r.Allowed {
		t = r.RetryAfter
	}
	secs := headerparts.CeilSeconds(t)
	if style == config.HeadersLegacy {
		return append(h, [2]string{"x-ratelimit-limit", s.pol.limitQuota(v)},
			[2]string{"x-ratelimit-remaining", strconv.FormatInt(r.Remaining, 10)},
			[2]string{"x-ratelimit-reset", strconv.FormatInt(secs, 10)})
	}
	// One string, "<name>;r=<remaining>;t=<seconds>", holds every value
	// that changes per request.
	name := s.pol.limitName(v)
	var buf [96]byte
	b := append(append(buf[:0], name...), ";r="...)
	b = strconv.AppendInt(b, r.Remaining, 10)
	atT := len(b)
	b = strconv.AppendInt(append(b, ";t="...), secs, 10)
	value := string(b)
	if policy == "" {
		policy = s.policyHeader(v)
	}
	h = append(h, [2]string{"ratelimit-policy", policy}, [2]string{"ratelimit", value})
	if style == config.HeadersBoth {
		h = append(h, [2]string{"x-ratelimit-limit", s.pol.limitQuota(v)},
			[2]string{"x-ratelimit-remaining", value[len(name)+3 : atT]},
			[2]string{"x-ratelimit-reset", value[atT+3:]})
	}
	return h
}

// policyHeader lists the policies of every enforced rule decided, or of
// v's rule when the verdict came from the deny cache.
func (s *Stream) policyHeader(v *verdict) string {
	switch len(s.enforced) {
	case 0:
		return s.pol.rulePolicy(enforcedRule{rule: v.rule, tier: v.tier, policy: headerparts.PolicyItem(s.pol.limitName(v), v.lim)})
	case 1:
		return s.pol.rulePolicy(s.enforced[0])
	}
	var b strings.Builder
	for i, e := range s.enforced {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(s.pol.rulePolicy(e))
	}
	return b.String()
}

// enforcedRule is a rule an enforced call decided, for RateLimit-Policy:
// its tier, and for an override the policy of the limits that decided.
type enforcedRule struct {
	rule, tier int
	policy     string
}

// enforcedRule describes the rule of c.origins[start:end].
func (s *Stream) enforcedRule(c *call, start, end int) enforcedRule {
	o := &c.origins[start]
	e := enforcedRule{rule: o.rule, tier: o.tier}
	if e.tier != tierOverride {
		return e
	}
	var b strings.Builder
	for i := start; i < end; i++ {
		if c.decision.Results[i].Unused() {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(headerparts.PolicyItem(s.pol.headers[o.rule].Positions[c.origins[i].limit], c.origins[i].picked))
	}
	e.policy = b.String()
	return e
}
