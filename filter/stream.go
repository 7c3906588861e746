package filter

import (
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/headermap"
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
	denyStored []*denyReply // the deny-cache entries this request stored
	stampKey   []byte       // scratch: a rule's key, for cachedPolicy
	// shadow is the shadow rules' tightest result, or their denial; valid
	// when hasShadow. local: failure_mode local decided a call. decision
	// is the line told to the proxy (decision.go).
	shadow    verdict
	hasShadow bool
	local     bool
	decision  []byte
	// bodyFollows: the request has a body (set by the proxy before the
	// headers).
	bodyFollows bool

	// The states of the optional steps (steps.go): each is nil until the
	// stream serves a request of a policy with its step, then recycled
	// with the stream. degraded: the spent limits of degrade rules
	// (degrade.go); near: the limits past their near_limit share, for
	// the warning header (near.go); reserve: what response_cost rules
	// noted of the request (money.go); leased: its spends from leases
	// (lease.go); slot: its concurrency slot id (concurrency.go);
	// delayed: its place among the requests a throttle holds
	// (throttle.go); resp: the response followed to settle its cost and
	// release its slots (response.go); wait: the wait for the request
	// body (request_body.go); rpc: the JSON-RPC calls of its body
	// (jsonrpc_calls.go); quota: set for the quota endpoint's
	// request, answered here once admitted, its reading of the caller's
	// keys (quota.go).
	degraded *degradeState
	near     *nearState
	reserve  *reserveState
	leased   *leaseState
	slot     *slotState
	delayed  *delayState
	resp     *responseState
	wait     *bodyWaitState
	rpc      *rpcState
	quota    *quotaState
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
	return s.OnRequestHeaderMap(headermap.Append(nil, headers))
}

// OnRequestHeaderMap matches the rules, builds the keys and sends the
// calls. It pauses the stream until every call has answered. m is the
// header map as proxy_get_header_map_pairs serializes it; the stream reads
// it in place until it ends.
func (s *Stream) OnRequestHeaderMap(m []byte) Action {
	s.req.headers, s.req.bearer.read, s.req.hasPath, s.now = headermap.Valid(m), false, false, time.Time{}
	if len(s.vm.policies) > 1 {
		s.pol = s.vm.pick(&s.req)
	}
	if len(s.vm.degradeHeaders) > 0 {
		s.stripDegradeHeaders()
	}
	ss := s.pol.steps
	if ss.has(stepQuota) {
		if s.pol.cfg.Quota.Matches(s.req.method(), s.req.path()) {
			s.quota = &quotaState{}
		}
	}
	if ss.has(stepUsageAsk) {
		s.narrowEncoding() // before the headers go on
		s.prepareUsageAsk()
	}
	if s.bodyFollows && ss.has(stepBodyWait) {
		if a, wait := s.waitForBody(); wait {
			return a
		}
	}
	return s.evaluate()
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
	if s.decided && s.allowed && s.delayedAt() == 0 && s.quota == nil {
		return Continue
	}
	return Pause
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
	if r := s.resp; r != nil {
		if r.watching || s.allowed && r.charged && s.followRules() {
			s.endResponse(false) // no response, or not all of it
		}
		r.started, r.charged = false, false
	}
	if r := s.rpc; r != nil {
		r.reset()
	}
	if w := s.wait; w != nil {
		if w.waiting {
			s.stopWaiting()
		}
		w.missed = false
	}
	if s.delayedAt() != 0 {
		s.undelay()
	}
	s.bodyFollows = false
	s.endQuota()
	s.clearStates()
	for _, c := range s.calls {
		s.vm.retry.drop(&c.rt) // sent to Redis it was not: nothing to release
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
	clear(s.denyStored)
	s.denyStored = s.denyStored[:0]
	s.outstanding, s.decided, s.inHeaders, s.allowed, s.hasVerdict = 0, false, false, false, false
	s.hasShadow, s.local = false, false
	s.host = nil
	s.req.reset(nil)
	s.vm.freeStreams = append(s.vm.freeStreams, s)
	s.vm.live--
}

// clearStates readies the steps' states the stream holds for its next
// request, keeping what they allocated.
func (s *Stream) clearStates() {
	if s.reserve != nil {
		s.reserve.estimates, s.reserve.askUsage = s.reserve.estimates[:0], false
	}
	if s.leased != nil {
		s.leased.uses = s.leased.uses[:0]
	}
	if s.slot != nil {
		s.slot.id = 0
	}
	if s.degraded != nil {
		s.degraded.limits = s.degraded.limits[:0]
	}
	if s.near != nil {
		s.near.warnings = s.near.warnings[:0]
	}
}
