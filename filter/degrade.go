package filter

import "github.com/redisrate/envoy-redis-ratelimit/filter/config"

// Degrade instead of deny (a rule's on_limit: degrade). The limits of the
// degrade rules a request matches share a call of their own, beside the
// enforced rules' call, as shadow rules do. When one of them is spent,
// that call charges none of them (the script's all or nothing), and the
// request goes on with a request header naming each spent limit,
// "<rule>/<limit>", for a route to send it elsewhere (a cheaper model, a
// fallback cluster). The enforced rules decide as ever: they may still
// deny it. A degrade rule's denial is cached as an enforced rule's is, so
// the requests after it degrade with no Redis call until its Retry-After;
// so does a cost no limit of the rule can ever admit.
//
// Envoy's router picks the route when the request headers go on, so the
// client's copy of the header is removed in the headers' callback
// (stripDegradeHeaders), and the decision is made before they go on: a
// request that waits for its body pauses its headers meanwhile when a
// degrade rule may apply (request_body.go).
//
// The proxy must clear its route cache once the header is set, for the
// route to be picked again: Envoy does so when a filter of ABI 0.2.0 (as
// the SDK exports) changes a request header (context.cc,
// replaceHeaderMapValue), as Higress's Envoy does unless a filter set the
// property clear_route_cache to off.

// RequestHeaderWriter is what a StreamHost offers when rules degrade:
// replace or remove a request header before the request goes on.
type RequestHeaderWriter interface {
	SetRequestHeader(name, value string)
	RemoveRequestHeader(name string)
}

// degradedLimit is a spent limit of a degrade rule, with what it has
// left when a call decided it now (Redis's, or the VM's answer), else -1:
// a cached denial or a cost above its capacity tells nothing of it.
type degradedLimit struct {
	rule, limit, tier int
	remaining         int64
}

// degradeState is the degrade step's state: the spent limits of one
// request's degrade rules.
type degradeState struct {
	limits []degradedLimit
}

// noteDegraded adds a spent limit to the stream's degrade state, made on
// first use.
func (s *Stream) noteDegraded(d degradedLimit) {
	if s.degraded == nil {
		s.degraded = &degradeState{}
	}
	s.degraded.limits = append(s.degraded.limits, d)
}

// degradeHeaders lists the distinct headers of the configuration's
// degrade rules, in rule order.
func degradeHeaders(cfg *config.Config) []string {
	var hs []string
	for _, r := range cfg.Rules {
		if r.OnLimit.Degrade && !contains(hs, r.OnLimit.Header) {
			hs = append(hs, r.OnLimit.Header)
		}
	}
	return hs
}

// allDegradeHeaders lists the distinct degrade headers of every policy.
func allDegradeHeaders(pols []*policy) []string {
	var hs []string
	for _, p := range pols {
		for _, h := range p.degradeHeaders {
			if !contains(hs, h) {
				hs = append(hs, h)
			}
		}
	}
	return hs
}

// stripDegradeHeaders removes a client's own copy of every policy's
// degrade headers in the request headers' callback, before the headers
// can go on to the router: only the filter routes a request to the
// fallback.
func (s *Stream) stripDegradeHeaders() {
	w, _ := s.host.(RequestHeaderWriter)
	if w == nil {
		return
	}
	for _, h := range s.vm.degradeHeaders {
		if _, ok := s.req.header(h); ok {
			w.RemoveRequestHeader(h)
		}
	}
}

// degradeUnread marks the request degraded by degrade rule ri, unchecked:
// the rule reads the body, which did not come within bodyWait (see
// request_body.go). Its header names the rule's limits as "*".
func (s *Stream) degradeUnread(ri int) {
	s.pol.metrics.rules[ri].degraded.Increment(1)
	s.noteDegraded(degradedLimit{rule: ri, limit: -1, remaining: -1})
}

// degrade notes v's limit as spent: the request will carry the rule's
// header unless another rule denies it.
func (s *Stream) degrade(v *verdict) {
	s.pol.metrics.rules[v.rule].degraded.Increment(1)
	s.noteDegraded(degradedLimit{rule: v.rule, limit: v.limit, tier: v.tier, remaining: -1})
}

// noteDegrade keeps the spent limits of a degrade call Redis (or the VM)
// decided, and caches each denial Redis made until its Retry-After. It
// reports whether the call degraded the request.
func (s *Stream) noteDegrade(c *call) bool {
	if c.decision.Allowed() {
		return false
	}
	for i := range c.origins {
		o, r := &c.origins[i], c.decision.Results[i]
		if r.Unused() || r.Allowed {
			continue
		}
		v := verdict{rule: o.rule, limit: o.limit, tier: o.tier, lim: o.picked, result: r, reason: reasonRateLimited}
		if !s.isDegraded(o.rule) {
			s.pol.metrics.rules[o.rule].degraded.Increment(1)
		}
		s.noteDegraded(degradedLimit{rule: o.rule, limit: o.limit, tier: o.tier, remaining: max(r.Remaining, 0)})
		if r.RetryAfter > 0 && !c.inVM && !c.isSlot(i) {
			s.pol.denyCache.store(o.ruleKey, o.cost, s.clock().Add(r.RetryAfter), v)
		}
	}
	return true
}

func (s *Stream) isDegraded(rule int) bool {
	if s.degraded == nil {
		return false
	}
	for _, d := range s.degraded.limits {
		if d.rule == rule {
			return true
		}
	}
	return false
}

// setDegradeHeaders sets each degrade header of the spent limits, once
// the request is admitted: "<rule>/<limit>", ", " between.
func (s *Stream) setDegradeHeaders() {
	w, _ := s.host.(RequestHeaderWriter)
	if s.degraded == nil || len(s.degraded.limits) == 0 || w == nil {
		return
	}
	rules := s.pol.cfg.Rules
	for _, h := range s.pol.degradeHeaders {
		var b []byte
		for _, d := range s.degraded.limits {
			if rules[d.rule].OnLimit.Header != h {
				continue
			}
			if len(b) > 0 {
				b = append(b, ", "...)
			}
			b = append(b, rules[d.rule].Name...)
			if d.limit < 0 {
				b = append(b, "/*"...)
				continue
			}
			name := s.pol.limitName(&verdict{rule: d.rule, limit: d.limit, tier: d.tier})
			b = append(b, '/')
			b = append(b, name[1:len(name)-1]...)
		}
		if len(b) > 0 {
			w.SetRequestHeader(h, string(b))
		}
	}
}
