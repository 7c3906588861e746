package filter

import (
	"strconv"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/headerparts"
	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
)

// reason is why a request was denied: the "error" of the local reply's
// body. The verdict of an admitted request, which names the limit its
// headers report, carries reasonRateLimited too.
type reason uint8

const (
	reasonRateLimited         reason = iota + 1 // a limit denied it, in Redis or in the deny cache
	reasonBlocked                               // an operator's block key exists
	reasonMissingKey                            // a key part is absent under on_missing_key: deny
	reasonCostExceedsCapacity                   // the request costs more than a limit can ever admit
	reasonUnavailable                           // Redis failed and failure_mode is deny
	reasonUnknownModel                          // the request names a model a price table refuses
	reasonUnreadableBody                        // a body rule cannot read the body as the upstream will
	reasonUnknownMethod                         // a JSON-RPC call's method a cost table refuses
	reasonUnknownTool                           // an MCP tools/call's tool a cost table refuses
	reasonTooManyKeys                           // a JSON-RPC batch spans more keys of a rule than its max_keys
)

var reasonNames = [...]string{
	reasonRateLimited:         "rate_limited",
	reasonBlocked:             "blocked",
	reasonMissingKey:          "missing_key",
	reasonCostExceedsCapacity: "cost_exceeds_capacity",
	reasonUnavailable:         "ratelimit_unavailable",
	reasonUnknownModel:        "unknown_model",
	reasonUnreadableBody:      "unreadable_body",
	reasonUnknownMethod:       "unknown_method",
	reasonUnknownTool:         "unknown_tool",
	reasonTooManyKeys:         "too_many_keys",
}

func (r reason) String() string {
	if int(r) < len(reasonNames) && reasonNames[r] != "" {
		return reasonNames[r]
	}
	return "reason(" + strconv.Itoa(int(r)) + ")"
}

// verdict is a request's fate: the denial a local reply reports, or the
// result the response headers report.
type verdict struct {
	rule, limit int // -1 when no rule or limit is to blame
	// tier is the rule's tier that decided (0 without tiers), or
	// tierOverride, when lim is the operator's limit that decided.
	tier       int
	lim        algorithms.Limit
	result     algorithms.Result
	blocked    bool
	blockedFor time.Duration
	reason     reason
	body       jsonbound.Refusal // why, for reasonUnreadableBody
	// call is 1 + the index (in rpcState.calls) of the JSON-RPC call that
	// decided it; 0 when none did.
	call int
}

// callsOutcome is what the calls of a request decided, beyond the limits'
// results, which go to Stream.verdict.
type callsOutcome struct {
	block   verdict // the first enforced block, when blocked
	blocked bool
	failed  bool // an enforced call failed: Redis decided nothing for it
}

// decide turns the calls' outcomes into the stream's verdict and acts on
// it: it admits the request, or answers it locally.
func (s *Stream) decide() {
	s.decided = true
	var local bool
	var over verdict
	if s.pol.steps.has(stepFallback) {
		local, over = s.decideLocally()
	}
	s.local = local
	if over.reason != 0 {
		s.pol.metrics.rules[over.rule].denied.Increment(1)
		s.pol.fallback.count(true)
		s.reject(&over)
		return
	}
	var out callsOutcome
	for _, c := range s.calls {
		switch {
		case c.err != nil:
			out.failed = out.failed || !c.shadow
		case c.decision.Blocked:
			s.noteBlock(c, &out)
		default:
			s.countRules(c)
			if c.degrade && s.noteDegrade(c) {
				continue
			}
			if !c.shadow {
				s.noteResults(c)
				continue
			}
			for i := range c.origins {
				s.noteShadow(c, i)
			}
		}
	}
	deny, denied := s.denial(&out)
	if local {
		s.pol.fallback.count(denied)
	}
	s.fillLeases(!denied)
	if denied {
		s.stampDenials(&deny)
		s.reject(&deny)
		return
	}
	s.allowed = true
	ss := s.pol.steps
	if ss.has(stepNearLimit) {
		s.countNear()
	}
	if ss.has(stepDegrade) {
		s.setDegradeHeaders()
	}
	s.tellAdmitted(out.failed && s.pol.cfg.FailOpen)
	if ss.has(stepThrottle) {
		if delay := s.throttleDelay(); delay > 0 {
			s.delay(delay)
			return
		}
	}
	if !s.inHeaders {
		s.resume()
	}
}

// throttleDelay is the longest a throttle of the request's calls holds it: the
// Redis calls' decision, as a local one never delays.
func (s *Stream) throttleDelay() time.Duration {
	var d time.Duration
	for _, c := range s.calls {
		if c.err == nil && !c.inVM && !c.shadow {
			d = max(d, c.decision.Delay)
		}
	}
	return d
}

// noteBlock counts a call an operator's block key stopped. The first
// enforced one is the request's block, cached for as long as the key lives.
func (s *Stream) noteBlock(c *call, out *callsOutcome) {
	d := &c.decision
	b := &c.blockers[d.BlockedBy]
	s.pol.metrics.rules[b.rule].blocked.Increment(1)
	if c.shadow {
		s.noteShadowDenial(verdict{rule: b.rule, limit: -1, reason: reasonBlocked, blocked: true, blockedFor: d.BlockedFor})
		return
	}
	if out.blocked {
		return
	}
	out.block = verdict{rule: b.rule, limit: -1, reason: reasonBlocked, blocked: true, blockedFor: d.BlockedFor, call: b.call}
	out.blocked = true
	if d.BlockedFor > 0 {
		s.pol.denyCache.store(b.ruleKey, 0, s.clock().Add(d.BlockedFor), out.block)
	}
}

// countRules counts each rule of a decided call once, by outcome: allowed
// when all its limits allowed, else denied, or would_deny for a shadow
// rule. An enforced rule joins s.enforced, whose policies the headers list.
// The origins of one rule's limits are adjacent.
func (s *Stream) countRules(c *call) {
	results := c.decision.Results
	for start := 0; start < len(c.origins); {
		ri, end, ruleAllowed := c.origins[start].rule, start, true
		for ; end < len(c.origins) && c.origins[end].rule == ri; end++ {
			ruleAllowed = ruleAllowed && results[end].Allowed
		}
		m := &s.pol.metrics.rules[ri]
		switch {
		case ruleAllowed:
			m.allowed.Increment(1)
		case c.degrade: // counted as degraded by noteDegrade
		case c.shadow:
			m.shadowDenied.Increment(1)
		default:
			m.denied.Increment(1)
		}
		if !c.shadow && (!c.degrade || c.decision.Allowed()) {
			s.enforced = append(s.enforced, s.enforcedRule(c, start, end))
		}
		start = end
	}
}

// noteResults keeps the tightest result of an enforced call as the
// stream's verdict, and caches every denial Redis made until its
// Retry-After.
func (s *Stream) noteResults(c *call) {
	granted := c.decision.Granted
	for i := range c.origins {
		o, r := &c.origins[i], c.decision.Results[i]
		cost := o.cost
		if i >= len(c.checks) && c.choices[o.choice].Lease > 0 {
			if !c.inVM && o.choice < len(granted) && granted[o.choice] > 0 {
				continue // the lease's verdict: see fillLeases
			}
			cost = c.choices[o.choice].Cost // what Redis denied
		}
		if r.Unused() {
			continue
		}
		v := verdict{rule: o.rule, limit: o.limit, tier: o.tier, lim: o.picked, result: r, reason: reasonRateLimited, call: o.call}
		if !s.hasVerdict || algorithms.Tighter(r, s.verdict.result) {
			s.verdict, s.hasVerdict = v, true
		}
		// The cache repeats only Redis, and not a concurrency limit's
		// denial: a slot may be released long before its RetryAfter.
		// A throttle admits, held, what comes within its max delay of it.
		retry := r.RetryAfter
		if t := s.pol.cfg.Rules[o.rule].Throttle; t != nil && s.vm.throttling() {
			retry -= t.MaxDelay
		}
		if !r.Allowed && retry > 0 && !c.inVM && !c.isSlot(i) {
			if dr := s.pol.denyCache.store(o.ruleKey, cost, s.clock().Add(retry), v); dr != nil {
				s.denyStored = append(s.denyStored, dr)
			}
		}
	}
}

// denial picks the request's denial, if any: a block first, then the
// tightest denying limit; failing those, when an enforced call failed, the
// failure mode applies (counted either way). Under failure_mode: local no
// call is left failed: decideLocally decided them.
func (s *Stream) denial(out *callsOutcome) (verdict, bool) {
	switch {
	case out.blocked:
		return out.block, true
	case s.hasVerdict && !s.verdict.result.Allowed:
		return s.verdict, true
	case !out.failed:
		return verdict{}, false
	case s.pol.cfg.FailOpen:
		s.pol.metrics.failOpen.Increment(1)
		return verdict{}, false
	default:
		s.pol.metrics.failClosed.Increment(1)
		return verdict{rule: -1, limit: -1, reason: reasonUnavailable}, true
	}
}

// countDenial counts a denial answered from the deny cache.
func (s *Stream) countDenial(v *verdict) {
	if v.blocked {
		s.pol.metrics.rules[v.rule].blocked.Increment(1)
	} else {
		s.pol.metrics.rules[v.rule].denied.Increment(1)
	}
}

// reject answers the request locally.
func (s *Stream) reject(v *verdict) Action {
	s.decided, s.allowed = true, false
	s.refundLeased()
	s.fillLeases(false)
	s.tellDenied(v, false)
	status, headers, body := s.render(v)
	s.host.SendLocalReply(status, headers, body)
	return Pause
}

// rejectCached answers a deny-cache hit with r, its key's last reply,
// rendering v again only when the second Retry-After shows has changed.
func (s *Stream) rejectCached(v *verdict, r *denyReply) Action {
	s.decided, s.allowed = true, false
	s.refundLeased()
	s.fillLeases(false)
	secs := headerparts.CeilSeconds(v.result.RetryAfter)
	if v.blocked {
		secs = headerparts.CeilSeconds(v.blockedFor)
	}
	if policy := s.cachedPolicy(r, v.rule); r.secs != secs || r.shown != policy {
		r.status, r.headers, r.body = s.renderPolicy(v, policy)
		r.secs, r.shown = secs, policy
	}
	status, body := r.status, r.body
	if s.rpcForm(v) { // this request's ids
		status, body = s.rpcReply(v, s.status(v), s.retryShown(v))
	}
	s.tellDenied(v, true)
	s.host.SendLocalReply(status, r.headers, body)
	return Pause
}

// render is v's local reply: the status, Retry-After and the rate-limit
// headers, and a JSON body naming the reason, rule and limit.
func (s *Stream) render(v *verdict) (int, [][2]string, []byte) {
	return s.renderPolicy(v, "")
}

// renderPolicy is render with RateLimit-Policy's value given ("": the
// rules this request decided, or v's rule). A rule with jsonrpc.refusal:
// jsonrpc gets its body in the JSON-RPC form (jsonrpc_refusal.go).
func (s *Stream) renderPolicy(v *verdict, policy string) (int, [][2]string, []byte) {
	cfg := s.pol.cfg
	status, retry := s.status(v), s.retryShown(v)
	limited := v.reason == reasonRateLimited
	// Retry-After, up to five rate-limit headers and Content-Type: one
	// allocation, as for the body below.
	headers := make([][2]string, 0, 7)
	if retry > 0 {
		headers = append(headers, [2]string{"retry-after", strconv.FormatInt(headerparts.CeilSeconds(retry), 10)})
	}
	if limited {
		headers = s.appendRateLimitHeaders(headers, v, policy)
	}
	headers = append(headers, [2]string{"content-type", "application/json"})
	if s.rpcForm(v) {
		status, body := s.rpcReply(v, status, retry)
		return status, headers, body
	}
	body := append(append(make([]byte, 0, 128), `{"error":"`...), v.reason.String()...)
	body = append(body, '"')
	if v.rule >= 0 {
		body = append(append(append(body, `,"rule":"`...), cfg.Rules[v.rule].Name...), '"')
	}
	if v.limit >= 0 && limited {
		body = append(append(body, `,"limit":`...), s.pol.limitName(v)...)
	}
	if v.reason == reasonUnreadableBody {
		body = append(append(append(body, `,"reason":"`...), v.body.String()...), '"')
	}
	if s.refusal(v) {
		body = s.appendRefusal(body, v)
	}
	if v.call > 0 {
		body = strconv.AppendInt(append(body, `,"call":`...), int64(v.call-1), 10)
	}
	if retry > 0 {
		body = append(body, `,"retry_after":`...)
		body = strconv.AppendInt(body, headerparts.CeilSeconds(retry), 10)
	}
	body = append(body, "}\n"...)
	return status, headers, body
}

// status is the HTTP status of v's local reply.
func (s *Stream) status(v *verdict) int {
	cfg := s.pol.cfg
	switch {
	case v.reason == reasonUnavailable:
		return cfg.FailureStatus
	case v.reason == reasonUnreadableBody && (v.body == jsonbound.RefuseTooLarge || v.body == jsonbound.RefuseTooManyCalls):
		return 413
	case v.reason == reasonUnreadableBody && v.body == jsonbound.RefuseLate:
		return 408
	case v.reason == reasonUnreadableBody:
		return 400
	case s.refusal(v):
		return refusalStatus(&cfg.Rules[v.rule])
	}
	return cfg.RejectStatus
}

// retryShown is the Retry-After v's reply shows: a block's time left, or
// a denying limit's; <= 0 for none.
func (s *Stream) retryShown(v *verdict) time.Duration {
	switch {
	case v.blocked:
		return v.blockedFor
	case v.limit >= 0 && !v.result.Allowed && v.reason == reasonRateLimited:
		return v.result.RetryAfter
	}
	return -1
}
