package filter

import (
	"strconv"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
)

// What the filter tells the proxy about each request it decided: one short
// line in the stream property ratelimit.decision, which Envoy keeps as the
// filter state wasm.ratelimit.decision, for an access log to print
// (%FILTER_STATE(wasm.ratelimit.decision:PLAIN)%; docs/access-log.md):
//
//	rule=api limit=per-second remaining=0 decision=denied reason=rate_limited
//
// Fields, in this order, each only when it applies:
//   - rule, limit: the rule and limit that decided: the denial's, else the
//     most constraining result (algorithms.Tighter);
//   - remaining: that limit's remaining after the request (before it, for
//     a denial);
//   - decision: allowed, denied, would_deny (admitted, but a shadow
//     rule would have denied it: rule and limit are that shadow rule's),
//     or degraded (admitted with an on_limit degrade rule's header: rule
//     and limit are its first spent limit's);
//   - reason: why a request was denied (the local reply's "error":
//     rate_limited, blocked, missing_key, cost_exceeds_capacity,
//     ratelimit_unavailable), or ratelimit_unavailable for a request
//     failure_mode allow admitted;
//   - shadow=true: only shadow rules decided the request;
//   - from: where the decision came from when not from Redis: deny_cache,
//     or local (failure_mode: local).
//
// It is set once per request, at its decision: one host call, unless
// decision_filter_state is false. A request no rule decided gets none, and
// the access log shows "-". Rule and limit
// names are [A-Za-z0-9_.-], so the line needs no quoting in a text or
// JSON log.

// decisionKind is the decision field.
type decisionKind uint8

const (
	decidedAllowed decisionKind = iota
	decidedDenied
	decidedWouldDeny
	decidedDegraded
)

var decisionNames = [...]string{decidedAllowed: "allowed", decidedDenied: "denied", decidedWouldDeny: "would_deny", decidedDegraded: "degraded"}

// decisionFrom is the from field.
type decisionFrom uint8

const (
	fromRedis decisionFrom = iota // no field
	fromDenyCache
	fromLocal
)

var fromNames = [...]string{fromDenyCache: "deny_cache", fromLocal: "local"}

// tellDenied tells the proxy a denial; v is the verdict the local reply
// renders.
func (s *Stream) tellDenied(v *verdict, cached bool) {
	from := fromRedis
	switch {
	case cached:
		from = fromDenyCache
	case s.local:
		from = fromLocal
	}
	s.tell(v, decidedDenied, v.reason, from, false)
}

// tellAdmitted tells the proxy an admission: failOpen when failure_mode
// allow admitted it. A shadow rule's denial comes first; then the tightest
// enforced result; then, when only shadow rules decided, theirs.
func (s *Stream) tellAdmitted(failOpen bool) {
	var why reason
	if failOpen {
		why = reasonUnavailable
	}
	from := fromRedis
	if s.local {
		from = fromLocal
	}
	switch {
	case len(s.degraded) > 0:
		d := s.degraded[0]
		s.tell(&verdict{rule: d.rule, limit: d.limit, tier: d.tier, reason: reasonRateLimited}, decidedDegraded, why, from, false)
	case s.hasShadow && s.shadowDenies():
		s.tell(&s.shadow, decidedWouldDeny, s.shadow.reason, from, false)
	case s.hasVerdict:
		s.tell(&s.verdict, decidedAllowed, why, from, false)
	case s.hasShadow:
		s.tell(&s.shadow, decidedAllowed, why, from, true)
	case failOpen || s.local:
		s.tell(nil, decidedAllowed, why, from, false)
	}
}

// tell renders the line into the stream's buffer and hands it to the
// proxy. It allocates nothing once the buffer has grown.
func (s *Stream) tell(v *verdict, kind decisionKind, why reason, from decisionFrom, shadow bool) {
	if !s.pol.cfg.DecisionState {
		return
	}
	b := s.decision[:0]
	if v != nil && v.rule >= 0 {
		b = append(b, "rule="...)
		b = append(b, s.pol.cfg.Rules[v.rule].Name...)
		if v.limit >= 0 {
			name := s.pol.limitName(v) // quoted, as the headers show it
			b = append(b, " limit="...)
			b = append(b, name[1:len(name)-1]...)
			if v.reason == reasonRateLimited {
				b = append(b, " remaining="...)
				b = strconv.AppendInt(b, max(v.result.Remaining, 0), 10)
			}
		}
		b = append(b, ' ')
	}
	b = append(b, "decision="...)
	b = append(b, decisionNames[kind]...)
	if why != 0 {
		b = append(b, " reason="...)
		b = append(b, why.String()...)
	}
	if shadow {
		b = append(b, " shadow=true"...)
	}
	if from != fromRedis {
		b = append(b, " from="...)
		b = append(b, fromNames[from]...)
	}
	s.decision = b
	s.host.SetDecision(b)
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
				s.warnings = append(s.warnings, nearWarning{rule: ri, limit: o.limit, tier: o.tier, remaining: r.Remaining})
			}
		}
	}
}

// shareOf is floor(n × ratio / 10⁶), exactly, for 0 <= ratio <= 10⁶.
func shareOf(n, ratio int64) int64 {
	const unit = 1_000_000
	return n/unit*ratio + n%unit*ratio/unit
}
