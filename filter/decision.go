package filter

import (
	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/decision"
)

// tellDenied tells the proxy a denial; v is the verdict the local reply
// renders.
func (s *Stream) tellDenied(v *verdict, cached bool) {
	from := decision.FromRedis
	switch {
	case cached:
		from = decision.FromDenyCache
	case s.local:
		from = decision.FromLocal
	}
	s.tell(v, remainingOf(v), decision.Denied, v.reason, from, false)
}

// tellAdmitted tells the proxy an admission: failOpen when failure_mode
// allow admitted it. A shadow rule's denial comes first; then the tightest
// enforced result; then, when only shadow rules decided, theirs.
func (s *Stream) tellAdmitted(failOpen bool) {
	var why reason
	if failOpen {
		why = reasonUnavailable
	}
	from := decision.FromRedis
	if s.local {
		from = decision.FromLocal
	}
	switch {
	case s.degraded != nil && len(s.degraded.limits) > 0:
		d := s.degraded.limits[0]
		v := verdict{rule: d.rule, limit: d.limit, tier: d.tier, reason: reasonRateLimited}
		s.tell(&v, d.remaining, decision.Degraded, why, from, false)
	case s.hasShadow && s.shadowDenies():
		s.tell(&s.shadow, remainingOf(&s.shadow), decision.WouldDeny, s.shadow.reason, from, false)
	case s.hasVerdict:
		s.tell(&s.verdict, remainingOf(&s.verdict), decision.Allowed, why, from, false)
	case s.hasShadow:
		s.tell(&s.shadow, remainingOf(&s.shadow), decision.Allowed, why, from, true)
	case failOpen || s.local:
		s.tell(nil, -1, decision.Allowed, why, from, false)
	}
}

// remainingOf is what v's limit has left, as Redis (or the VM) said: -1
// when v is no limit's result.
func remainingOf(v *verdict) int64 {
	if v.reason != reasonRateLimited {
		return -1
	}
	return max(v.result.Remaining, 0)
}

// tell sets the stream's decision line (package decision) and hands it to
// the proxy, with remaining for v's limit (-1: not known, left out). It
// allocates nothing once the buffer has grown.
func (s *Stream) tell(v *verdict, remaining int64, kind decision.Kind, why reason, from decision.From, shadow bool) {
	if !s.pol.cfg.DecisionState {
		return
	}
	line := decision.Line{Kind: kind, From: from, Shadow: shadow, Remaining: -1}
	if v != nil && v.rule >= 0 {
		line.Rule = s.pol.cfg.Rules[v.rule].Name
		if v.limit >= 0 {
			name := s.pol.limitName(v) // quoted, as the headers show it
			line.Limit = name[1 : len(name)-1]
			line.Remaining = remaining
		}
	}
	if why != 0 {
		line.Reason = why.String()
	}
	s.decision = decision.Append(s.decision[:0], &line)
	s.host.SetDecision(s.decision)
}

// noteShadow keeps the tightest result of a shadow call, for tellAdmitted:
// i is the result's index in c.decision.Results. A shadow denial that is
// no limit's result (a block, a cost above capacity) stays.
func (s *Stream) noteShadow(c *call, i int) {
	o, r := &c.origins[i], c.decision.Results[i]
	if r.Unused() || s.hasShadow && (s.shadow.reason != reasonRateLimited || !algorithms.Tighter(r, s.shadow.result)) {
		return
	}
	s.shadow = verdict{rule: o.rule, limit: o.limit, tier: o.tier, lim: o.picked, result: r, reason: reasonRateLimited}
	s.hasShadow = true
}

// noteShadowDenial keeps a shadow rule's denial that is no limit's result,
// unless one is kept already.
func (s *Stream) noteShadowDenial(v verdict) {
	if !s.hasShadow || !s.shadowDenies() {
		s.shadow, s.hasShadow = v, true
	}
}

// shadowDenies reports whether the shadow verdict kept would deny.
func (s *Stream) shadowDenies() bool {
	return s.shadow.reason != reasonRateLimited || !s.shadow.result.Allowed
}

// countNear counts, once per rule, the admission in the rule's near_limit
// when one of its limits has used more than its share of its quota (the
// rule's near_limit.ratio, else near_limit_ratio; as
// envoyproxy/ratelimit's near_limit): with a quota of 10 and 0.8, past
// floor(0.8 × 10) = 8 used, so the 9th and 10th requests of a window.
// Each such limit of an enforced rule with a near_limit.header is kept
// for the response's warning (near.go). The results are Redis's, or the
// VM's under failure_mode: local; a spend from a lease is not counted,
// nor a degrade call that charged nothing.
func (s *Stream) countNear() {
	rules := s.pol.cfg.Rules
	for _, c := range s.calls {
		if c.err != nil || c.decision.Blocked || len(c.decision.Results) != len(c.origins) ||
			c.degrade && !c.decision.Allowed() {
			continue
		}
		counted := -1
		for i := range c.origins {
			o, r := &c.origins[i], &c.decision.Results[i]
			ri := o.rule
			if r.Unused() || !r.Allowed || r.Limit <= 0 {
				continue
			}
			ratio := rules[ri].NearLimit.Ratio
			if ratio == 0 {
				ratio = s.pol.nearLimit
			}
			if r.Limit-r.Remaining <= shareOf(r.Limit, ratio) {
				continue
			}
			if ri != counted {
				s.pol.metrics.rules[ri].nearLimit.Increment(1)
				counted = ri // a rule's results are adjacent
			}
			if !c.shadow && rules[ri].NearLimit.Header != "" {
				s.nearWarnings().note(nearWarning{rule: ri, limit: o.limit, tier: o.tier, remaining: r.Remaining})
			}
		}
	}
}

// shareOf is floor(n × ratio / 10⁶), exactly, for 0 <= ratio <= 10⁶.
func shareOf(n, ratio int64) int64 {
	const unit = 1_000_000
	return n/unit*ratio + n%unit*ratio/unit
}
