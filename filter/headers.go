package filter

import (
	"strconv"
	"strings"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// The rate-limit response headers: RateLimit-Policy and RateLimit (IETF
// draft 10) and X-RateLimit-*, from pieces each policy renders once per
// rule and tier.

// ruleHeaders are a rule's header pieces, rendered once per tier: the
// RateLimit-Policy value, and per limit the quoted name and the quota.
type ruleHeaders struct {
	levels []levelHeaders
	// positions are the quoted names of an override's limits:
	// "<rule>.override", or "<rule>.override.<i>" when the rule keeps
	// more than one state per key.
	positions []string
	// choices: the rule's tiers as a Choice sends them; with tiers from a
	// header or key part, one single-tier slice per tier.
	choices    []algorithms.Tier
	levelTiers [][]algorithms.Tier
}

type levelHeaders struct {
	policy        string
	names, quotas []string
}

func newRuleHeaders(r *config.Rule) ruleHeaders {
	var h ruleHeaders
	for _, level := range r.Levels() {
		var lh levelHeaders
		var policy []string
		for _, l := range level.Limits {
			name := `"` + l.Name + `"`
			policy = append(policy, policyItem(name, l.Limit))
			q, _ := l.Limit.Policy()
			lh.names, lh.quotas = append(lh.names, name), append(lh.quotas, strconv.FormatInt(q, 10))
		}
		lh.policy = strings.Join(policy, ", ")
		h.levels = append(h.levels, lh)
	}
	h.choices = r.ScriptTiers()
	for _, t := range h.choices {
		h.levelTiers = append(h.levelTiers, []algorithms.Tier{t})
	}
	for _, name := range r.OverrideNames() {
		h.positions = append(h.positions, `"`+name+`"`)
	}
	return h
}

// policyItem is one limit's RateLimit-Policy item: "name";q=10;w=60, or
// for a concurrency limit "name";q=10;qu="concurrent-requests", the
// draft's quota unit for requests in flight, with no window.
func policyItem(quotedName string, l algorithms.Limit) string {
	q, w := l.Policy()
	if l.Algorithm == algorithms.Concurrency {
		return quotedName + ";q=" + strconv.FormatInt(q, 10) + `;qu="concurrent-requests"`
	}
	return quotedName + ";q=" + strconv.FormatInt(q, 10) + ";w=" + strconv.FormatInt(ceilSeconds(w), 10)
}

// limitName is the quoted name the headers give v's limit.
func (p *policy) limitName(v *verdict) string {
	h := &p.headers[v.rule]
	if v.tier == tierOverride {
		return h.positions[v.limit]
	}
	return h.levels[v.tier].names[v.limit]
}

// limitQuota is v's limit's quota, as X-RateLimit-Limit shows it.
func (p *policy) limitQuota(v *verdict) string {
	if v.tier == tierOverride {
		q, _ := v.lim.Policy()
		return strconv.FormatInt(q, 10)
	}
	return p.headers[v.rule].levels[v.tier].quotas[v.limit]
}

// rulePolicy is the RateLimit-Policy value of an enforced rule.
func (p *policy) rulePolicy(e enforcedRule) string {
	if e.tier == tierOverride {
		return e.policy
	}
	return p.headers[e.rule].levels[max(e.tier, 0)].policy
}

// appendRateLimitHeaders renders v in the configured header style.
func (s *Stream) appendRateLimitHeaders(h [][2]string, v *verdict) [][2]string {
	style := s.pol.cfg.Headers
	if style == config.HeadersNone {
		return h
	}
	r := v.result
	t := r.ResetAfter
	if !r.Allowed {
		t = r.RetryAfter
	}
	secs := strconv.FormatInt(ceilSeconds(t), 10)
	remaining := strconv.FormatInt(r.Remaining, 10)
	if style == config.HeadersDraft10 || style == config.HeadersBoth {
		h = append(h, [2]string{"ratelimit-policy", s.policyHeader(v)},
			[2]string{"ratelimit", s.pol.limitName(v) + ";r=" + remaining + ";t=" + secs})
	}
	if style == config.HeadersLegacy || style == config.HeadersBoth {
		h = append(h, [2]string{"x-ratelimit-limit", s.pol.limitQuota(v)},
			[2]string{"x-ratelimit-remaining", remaining},
			[2]string{"x-ratelimit-reset", secs})
	}
	return h
}

// policyHeader lists the policies of every enforced rule decided, or of
// v's rule when the verdict came from the deny cache.
func (s *Stream) policyHeader(v *verdict) string {
	switch len(s.enforced) {
	case 0:
		return s.pol.rulePolicy(enforcedRule{rule: v.rule, tier: v.tier, policy: policyItem(s.pol.limitName(v), v.lim)})
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

// ceilSeconds rounds a positive duration up to whole seconds, at least 1;
// zero and negative durations give 0.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
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
		b.WriteString(policyItem(s.pol.headers[o.rule].positions[c.origins[i].limit], c.origins[i].picked))
	}
	e.policy = b.String()
	return e
}
