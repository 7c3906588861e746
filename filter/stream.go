package filter

import (
	"strings"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// Stream is the filter's state for one HTTP request. Streams and their
// calls are recycled by the Plugin (a VM is single-threaded), so a request
// allocates little beyond the strings it must hand to the proxy.
type Stream struct {
	// vm is the Plugin that made the stream; pol is the policy whose
	// configuration applies: the top level's, or that of the _rules_
	// entry the request matched.
	vm   *Plugin
	pol  *policy
	host StreamHost
	req  request

	calls       []*call
	spare       []*call // calls of earlier requests, ready for reuse
	outstanding int
	decided     bool
	inHeaders   bool // inside OnRequestHeaders: answer by return value
	allowed     bool
	// ruleKey is the key of the rule being added, "<prefix>{<rule>|<parts>}":
	// its limits' keys and its block key extend it.
	ruleKey []byte
	// now is the time of the event being handled, read from the host at
	// most once per event: in wasm each read is two host calls.
	now time.Time
	// verdict is the tightest enforced result, for the response headers;
	// valid when hasVerdict. enforced lists the enforced rules decided.
	verdict    verdict
	hasVerdict bool
	enforced   []enforcedRule
	// charged is set when a response_cost rule or a concurrency limit
	// joined a call: the response is then followed (resp) to settle its
	// cost and release its slots.
	charged bool
	resp    responseState
	// slot is the request's concurrency slot id, 0 until a concurrency
	// limit joins a call (see concurrency.go).
	slot int64
	// leased are the request's spends from leases (see lease.go).
	leased []leaseUse
	// bodyFollows: the request has a body (set by the proxy before the
	// headers). body is the request's body when a rule's reservation
	// reads it; waitingSince is when the stream began to wait for it.
	bodyFollows  bool
	waitingBody  bool
	waitingSince time.Time
	body         []byte
	// held is 1 + the stream's place among the requests a throttle holds
	// until releaseAt (see throttle.go), 0 when not held.
	held      int
	releaseAt time.Time
}

// NewStream starts a stream, reusing a finished one when it can.
func (p *Plugin) NewStream(host StreamHost) *Stream {
	var s *Stream
	if n := len(p.freeStreams); n > 0 {
		s, p.freeStreams = p.freeStreams[n-1], p.freeStreams[:n-1]
	} else {
		s = &Stream{vm: p}
	}
	s.pol, s.host = p.top(), host
	s.req.reset(host)
	p.live++
	return s
}

// OnRequestHeaders is OnRequestHeaderMap with the headers as pairs.
func (s *Stream) OnRequestHeaders(headers [][2]string) Action {
	return s.OnRequestHeaderMap(appendHeaderMap(nil, headers))
}

// OnRequestHeaderMap matches the rules, builds the keys and sends the
// calls. It pauses the stream until every call has answered. m is the
// header map as proxy_get_header_map_pairs serializes it; the stream reads
// it in place until it ends.
func (s *Stream) OnRequestHeaderMap(m []byte) Action {
	s.req.headers, s.req.bearer.read, s.req.hasPath, s.now = validHeaderMap(m), false, false, time.Time{}
	if len(s.vm.policies) > 1 {
		s.pol = s.vm.pick(&s.req)
	}
	if s.bodyFollows && s.pol.bodyRules && s.needsBody() {
		s.awaitBody(true)
		return Pause
	}
	return s.evaluate()
}

// evaluate matches the rules, builds the keys and sends the calls; it
// returns Pause until every call has answered.
func (s *Stream) evaluate() Action {
	cfg := s.pol.cfg
	for ri := range cfg.Rules {
		rule := &cfg.Rules[ri]
		if !matches(&rule.Match, &s.req) {
			continue
		}
		var ok bool
		s.ruleKey, ok = appendRuleKey(s.ruleKey[:0], cfg.Redis.Prefix, rule, &s.req, cfg.TrustedHops)
		if !ok {
			if rule.OnMissing == config.MissingDeny && !rule.Shadow {
				s.pol.metrics.rules[ri].denied.Increment(1)
				return s.reject(&verdict{rule: ri, limit: -1, reason: reasonMissingKey})
			}
			continue
		}
		cost, checkOnly := s.cost(rule)
		tier := s.localTier(rule, cfg.TrustedHops)
		if !rule.Shadow {
			if v, ok := s.pol.denyCache.lookup(s.ruleKey, cost, tier, s.clock); ok {
				s.pol.metrics.cacheHits.Increment(1)
				s.countDenial(&v)
				return s.reject(&v)
			}
		}
		if lt, li := overCapacity(rule, tier, cost); li >= 0 {
			if rule.Shadow {
				s.pol.metrics.rules[ri].shadowDenied.Increment(1)
				continue
			}
			s.pol.metrics.rules[ri].denied.Increment(1)
			return s.reject(&verdict{rule: ri, limit: li, tier: lt, reason: reasonCostExceedsCapacity})
		}
		if t := s.pol.leaseTable(ri); t != nil && cost > 0 {
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
		return Continue
	}
	s.outstanding = len(s.calls)
	s.inHeaders = true
	for _, c := range s.calls {
		c.seal()
		s.pol.dispatch(c) // a failed dispatch completes its call at once
	}
	s.inHeaders = false
	if s.decided && s.allowed && s.held == 0 {
		return Continue
	}
	return Pause
}

// clock returns the time of the current event.
func (s *Stream) clock() time.Time {
	if s.now.IsZero() {
		s.now = s.vm.host.Now()
	}
	return s.now
}

// HoldUntilAdmitted answers a request body or trailers callback: Pause
// while the decision is pending or once the request is rejected, Continue
// once it is admitted. Continue while pending would release the paused
// request headers undecided.
func (s *Stream) HoldUntilAdmitted() Action {
	if s.decided && s.allowed && s.held == 0 {
		return Continue
	}
	return Pause
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

// cost reads the request's cost: the configured header when it holds a
// non-negative integer, raised to cost.min, the default otherwise. A
// response_cost rule's
// cost is its reservation; a reservation of 0 checks only, decided as a
// cost of 1 (so its denials are cached as cost 1).
func (s *Stream) cost(rule *config.Rule) (cost int64, checkOnly bool) {
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
		if n, ok := bodyInteger(s.body, body); ok {
			cost = n
		}
	}
	if rule.Response != nil && cost == 0 {
		return 1, true
	}
	return cost, false
}

// matches reports whether r meets m: each condition m sets.
func matches(m *config.Match, r *request) bool {
	if m.Path != "" && r.path() != m.Path {
		return false
	}
	if m.PathPrefix != "" && !strings.HasPrefix(r.path(), m.PathPrefix) {
		return false
	}
	if len(m.Methods) > 0 && !contains(m.Methods, r.method()) {
		return false
	}
	if len(m.Hosts) > 0 && !contains(m.Hosts, r.host()) {
		return false
	}
	return headersMatch(m.Headers, r)
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// callDone records one call's outcome; the last one decides the stream.
func (s *Stream) callDone(c *call, err error) {
	c.err = err
	s.outstanding--
	if s.outstanding > 0 || s.decided {
		return
	}
	s.decide()
}

// Abandon ends a stream whose context the proxy deleted without telling
// the filter (with HTTP/3's deferred logging, proxy_on_log may never reach
// it); it is counted in ratelimit.streams.abandoned.
func (s *Stream) Abandon() {
	s.vm.top().metrics.abandoned.Increment(1)
	s.OnDone()
}

// OnDone ends the stream: replies still in flight will be ignored, and the
// stream goes back to the plugin for reuse. Call it once per NewStream.
func (s *Stream) OnDone() {
	s.fillLeases(false) // undecided: what its calls were granted is the leases'
	if s.resp.watching || s.allowed && s.charged && s.followRules() {
		s.endResponse(false) // no response, or not all of it
	}
	s.resp.started = false
	if s.waitingBody {
		s.awaitBody(false)
	}
	if s.held != 0 {
		s.unhold()
	}
	s.charged, s.bodyFollows, s.body, s.slot, s.leased = false, false, s.body[:0], 0, s.leased[:0]
	for _, c := range s.calls {
		if c.inFlight && (c.slot != 0 || len(c.leases) > 0) {
			s.pol.detach(c) // its reply releases what it acquired, and fills its leases
			continue
		}
		s.pol.releaseSlots(c) // a call that admitted a denied request, or was never followed
		s.vm.untrack(c)
		c.stream = nil
		s.spare = append(s.spare, c)
	}
	s.calls = s.calls[:0]
	s.enforced = s.enforced[:0]
	s.outstanding, s.decided, s.inHeaders, s.allowed, s.hasVerdict = 0, false, false, false, false
	s.host = nil
	s.req.reset(nil)
	s.vm.freeStreams = append(s.vm.freeStreams, s)
	s.vm.live--
}
