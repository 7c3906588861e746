package filter

import "github.com/redisrate/envoy-redis-ratelimit/filter/config"

// The rule loop of one request: match, key, cost, the checks answered
// without Redis (deny cache, capacity, lease), then the calls.

// evaluate matches the rules, builds the keys and sends the calls; it
// returns Pause until every call has answered.
func (s *Stream) evaluate() Action {
	cfg, missed := s.pol.cfg, s.bodyMissed()
	for ri := range cfg.Rules {
		rule, rs := &cfg.Rules[ri], s.pol.ruleSteps[ri]
		s.req.bodyMax, s.req.refused = rule.MaxRequestBodyBytes, 0
		if missed && rule.OnLimit.Degrade && rule.ReadsBody() {
			if matchesHead(&rule.Match, &s.req) {
				s.degradeUnread(ri)
			}
			continue
		}
		if !matches(&rule.Match, &s.req) {
			if s.req.refused != 0 && s.unreadable(ri) {
				return Pause
			}
			continue
		}
		if rs.has(stepJSONRPC) {
			if s.evaluateCalls(ri, rs) {
				return Pause
			}
			continue
		}
		if (s.req.bodyLen > 0 || s.req.bodyRefusal != 0) && rule.ReadsRequestBody() {
			if s.req.jsonBody(); s.req.refused != 0 && s.unreadable(ri) {
				return Pause
			}
		}
		var ok bool
		s.ruleKey, ok = appendRuleKey(s.ruleKey[:0], cfg.Redis.Prefix, rule, &s.req, cfg.TrustedHops)
		if !ok && s.req.refused != 0 && s.unreadable(ri) {
			return Pause
		}
		if !ok {
			if rule.OnMissing == config.MissingDeny && !rule.Shadow {
				s.pol.metrics.rules[ri].denied.Increment(1)
				return s.reject(&verdict{rule: ri, limit: -1, reason: reasonMissingKey})
			}
			continue
		}
		var est *reqEstimate
		if rs.has(stepReserve) {
			var known bool
			if est, known = s.noteEstimate(ri, rule.Response); !known && !rule.Shadow {
				s.pol.metrics.rules[ri].denied.Increment(1)
				return s.reject(&verdict{rule: ri, limit: -1, reason: reasonUnknownModel})
			}
		}
		cost, checkOnly := rule.Cost.Default, false
		if rs.has(stepCost) {
			cost, checkOnly = s.cost(rule, est)
		}
		if s.req.refused != 0 && s.unreadable(ri) {
			return Pause
		}
		tier := s.localTier(rule, cfg.TrustedHops)
		if rs.has(stepDenyCache) {
			if v, r, ok := s.pol.denyCache.lookup(s.ruleKey, cost, tier, s.clock); ok {
				s.pol.metrics.cacheHits.Increment(1)
				if rule.OnLimit.Degrade && !v.blocked {
					s.degrade(&v)
					continue
				}
				s.countDenial(&v)
				return s.rejectCached(&v, r)
			}
		}
		if lt, li := s.overCapacity(rs, rule, tier, cost); li >= 0 {
			if rule.Shadow {
				s.pol.metrics.rules[ri].shadowDenied.Increment(1)
				s.noteShadowDenial(verdict{rule: ri, limit: li, tier: lt, reason: reasonCostExceedsCapacity})
				continue
			}
			v := verdict{rule: ri, limit: li, tier: lt, reason: reasonCostExceedsCapacity}
			if rule.OnLimit.Degrade {
				s.degrade(&v)
				continue
			}
			s.pol.metrics.rules[ri].denied.Increment(1)
			return s.reject(&v)
		}
		if t := s.pol.leaseTable(ri); rs.has(stepLease) && cost > 0 {
			switch how, e := s.lease(t, tier, cost); how {
			case leaseSpent:
				s.noteLeased(e, ri)
				continue
			case leaseHeld:
				s.pol.metrics.rules[ri].denied.Increment(1)
				v := s.heldVerdict(e)
				return s.reject(&v)
			case leaseAsked:
				s.addLeased(e, ri, tier, cost)
				continue
			}
		}
		s.add(ri, tier, cost, checkOnly)
	}
	if len(s.calls) == 0 {
		s.decided, s.allowed = true, true
		s.setDegradeHeaders()
		s.tellAdmitted(false) // nothing to tell unless a lease or a shadow rule decided
		return s.goOn()
	}
	s.outstanding = len(s.calls)
	s.inHeaders = true
	for _, c := range s.calls {
		c.seal()
		s.pol.dispatch(c) // a failed dispatch completes its call at once
	}
	s.inHeaders = false
	if s.decided && s.allowed && s.delayedAt() == 0 {
		return s.goOn()
	}
	return Pause
}

// cost reads the request's cost: the configured header when it holds a
// non-negative integer, raised to cost.min, the default otherwise. A
// response_cost rule's cost is its reservation, noted in est (money.go:
// with usage, the estimate's output tokens and the request's size in
// input tokens, priced when the rule has a price); a reservation of 0
// checks only, decided as a cost of 1 (so its denials are cached as cost
// 1).
func (s *Stream) cost(rule *config.Rule, est *reqEstimate) (cost int64, checkOnly bool) {
	header, body, def := rule.Cost.Header, "", rule.Cost.Default
	if rc := rule.Response; rc != nil {
		header, body, def = rc.Reserve.Header, rc.Reserve.Body, rc.Reserve.Default
	}
	cost = def
	switch {
	case header != "":
		if v, ok := s.req.header(header); ok {
			if n, ok := config.ParseCost(v); ok {
				cost = n
			}
		}
		if rule.Response == nil {
			cost = max(cost, rule.Cost.Min) // a client may not lower its charge
		}
	case body != "":
		if n, ok := s.req.bodyInteger(body); ok {
			cost = n
		}
	}
	if rule.Response != nil && est != nil {
		est.out = cost
		cost = reservation(rule.Response, est)
	}
	if rule.Response != nil && cost == 0 {
		return 1, true
	}
	return cost, false
}

// overCapacity is overCapacity, for a rule with a capacity step.
func (s *Stream) overCapacity(rs steps, rule *config.Rule, tier int, cost int64) (int, int) {
	if !rs.has(stepCapacity) {
		return 0, -1
	}
	return overCapacity(rule, tier, cost)
}

// overCapacity returns the first limit of the request's tier that the
// cost cannot fit, and that tier, or limit -1; when Redis picks the tier,
// every tier's limits.
func overCapacity(rule *config.Rule, tier int, cost int64) (int, int) {
	if rule.Tiers == nil || tier >= 0 {
		limits := rule.TierLimits(max(tier, 0))
		for li := range limits {
			if limits[li].Limit.CheckCost(cost) != nil {
				return max(tier, 0), li
			}
		}
		return 0, -1
	}
	for lt := range rule.Tiers.Levels {
		if _, li := overCapacity(rule, lt, cost); li >= 0 {
			return lt, li
		}
	}
	return 0, -1
}
