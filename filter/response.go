package filter

import (
	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/usage"
)

// ResponseReader is what a StreamHost offers when rules charge what the
// response says: a response header's value, "" when absent.
type ResponseReader interface {
	ResponseHeader(name string) string
}

// responseState is the settle step's state: it follows the response of
// an admitted request that matched a response_cost rule (or took
// concurrency slots), until its end settles the charges.
type responseState struct {
	// charged: a response_cost rule or a concurrency limit joined a
	// call: the response is followed to settle its cost and release its
	// slots.
	charged  bool
	watching bool // admitted with a response_cost rule, not yet settled
	started  bool // the rules were listed: at the response, or at the end
	status   int
	rules    []responseRule
	scanners []usage.Scanner // recycled with the stream
}

// responseRule is one response_cost rule of the request and what its
// response said.
type responseRule struct {
	rule    int
	cost    int64
	found   bool
	scanner int // index in responseState.scanners, or -1
}

// charge marks the request charged, making its settle state on first use.
func (s *Stream) charge() {
	if s.resp == nil {
		s.resp = &responseState{}
	}
	s.resp.charged = true
}

// charged reports whether a response_cost rule or a concurrency limit
// joined a call of the request.
func (s *Stream) charged() bool { return s.resp != nil && s.resp.charged }

// Watching reports whether the stream waits for its response's end to
// settle a cost: the proxy must then keep it until the response ends or
// the stream is done.
func (s *Stream) Watching() bool { return s.resp != nil && s.resp.watching }

// WantsResponseBody reports whether the response body's chunks must be
// handed to OnResponseBody.
func (s *Stream) WantsResponseBody() bool {
	return s.Watching() && len(s.resp.scanners) > 0
}

// startResponse reads, at the response headers, what the response_cost
// rules need of them, and readies the body scanners.
func (s *Stream) startResponse() {
	rr, _ := s.host.(ResponseReader)
	if rr == nil || !s.followRules() {
		return
	}
	r, cfg := s.resp, s.pol.cfg
	r.status = 0
	if v := rr.ResponseHeader(":status"); v != "" {
		if n, ok := config.ParseCost(v); ok && n < 1000 {
			r.status = int(n)
		}
	}
	sse, typed := false, false
	for i := range r.rules {
		x := &r.rules[i]
		rc := cfg.Rules[x.rule].Response
		switch {
		case !rc.ChargesStatus(r.status):
			x.cost, x.found = 0, true
		case rc.Header != "":
			x.cost, x.found = config.ParseCost(rr.ResponseHeader(rc.Header))
		case rc.Usage != nil:
			if !typed {
				sse, typed = usage.IsEventStream(rr.ResponseHeader("content-type")), true
			}
			x.scanner = len(r.scanners)
			if len(r.scanners) < cap(r.scanners) {
				r.scanners = r.scanners[:len(r.scanners)+1]
			} else {
				r.scanners = append(r.scanners, usage.Scanner{})
			}
			r.scanners[x.scanner].Start(rc.Usage, sse, rc.MaxBodyBytes)
			r.scanners[x.scanner].SetEncoding(rr.ResponseHeader("content-encoding"))
		default: // a status-only rule: the matching response costs 1
			x.cost, x.found = 1, true
		}
	}
}

// followRules lists the request's response_cost rules, once: it reports
// whether there are any to follow.
func (s *Stream) followRules() bool {
	r, cfg := s.resp, s.pol.cfg
	if r.started {
		return false
	}
	r.started = true
	r.rules, r.scanners = r.rules[:0], r.scanners[:0]
	for _, c := range s.calls {
		for i := range c.origins {
			ri := c.origins[i].rule
			if cfg.Rules[ri].Response == nil || r.has(ri) {
				continue
			}
			r.rules = append(r.rules, responseRule{rule: ri, scanner: -1})
		}
	}
	r.watching = len(r.rules) > 0 || s.holdsSlots()
	return r.watching
}

func (r *responseState) has(rule int) bool {
	for _, x := range r.rules {
		if x.rule == rule {
			return true
		}
	}
	return false
}

// OnResponseBody scans one chunk of the response body; the last one
// (endOfStream) settles.
func (s *Stream) OnResponseBody(chunk []byte, endOfStream bool) {
	if !s.Watching() {
		return
	}
	for i := range s.resp.scanners {
		s.resp.scanners[i].Write(chunk)
	}
	if endOfStream {
		s.endResponse(true)
	}
}

// OnResponseTrailers ends the response: it settles.
func (s *Stream) OnResponseTrailers() {
	if s.Watching() {
		s.endResponse(true)
	}
}

// endResponse works out each response_cost rule's cost, counts the
// fallbacks, and settles: complete when the response ended, false when
// the stream ended first (a reset, the client gone).
func (s *Stream) endResponse(complete bool) {
	r := s.resp
	r.watching = false
	cfg := s.pol.cfg
	for i := range r.rules {
		x := &r.rules[i]
		rc, m := cfg.Rules[x.rule].Response, s.pol.metrics.rules[x.rule].response
		if x.scanner >= 0 && complete {
			x.cost, x.found = r.scanners[x.scanner].Finish()
			if x.found && rc.Price != nil {
				x.cost = s.moneyCost(x.rule, rc, &r.scanners[x.scanner])
			}
		}
		switch {
		case !complete:
			m.streamReset.Increment(1)
			x.found = false
			x.cost = s.fallbackCost(rc.OnReset, x.rule, rc)
		case !x.found:
			m.usageMissing.Increment(1)
			x.cost = s.fallbackCost(rc.OnMissing, x.rule, rc)
		}
		x.cost = min(x.cost, rc.MaxCost)
	}
	for _, c := range s.calls {
		s.settleCall(c)
	}
}

// fallbackCost is what a Fallback charges rule ri: -1 keeps the
// reservation.
func (s *Stream) fallbackCost(f config.Fallback, ri int, rc *config.ResponseCost) int64 {
	switch f {
	case config.FallbackDefault:
		return rc.Default
	case config.FallbackNothing:
		return 0
	case config.FallbackEstimate:
		return estimateCost(rc, s.estimateOf(ri))
	}
	return -1
}

// settleCall sends the settles of one admission call: its response_cost
// limits whose cost differs from what was reserved, and the release of
// the slots it acquired.
func (s *Stream) settleCall(c *call) {
	if c.err == nil && (c.decision.Blocked || len(c.decision.Results) != len(c.origins) || !c.decision.Allowed()) {
		return // nothing was charged at admission, and nothing will be
	}
	var sc *settleCall
	for i := range c.origins {
		o := &c.origins[i]
		x := s.resp.find(o.rule)
		if x == nil {
			continue
		}
		key, limit, checkOnly, ok := c.target(i, s.pol.cfg)
		if !ok || limit.Algorithm == algorithms.Concurrency { // released below
			continue
		}
		reserved, at := o.cost, c.decision.Now
		if checkOnly {
			reserved = 0
		}
		if c.err != nil { // admitted by failure_mode: nothing was reserved
			reserved, at = 0, 0
		}
		cost := x.cost
		if cost < 0 {
			cost = reserved
		}
		if cost == reserved {
			continue
		}
		if sc == nil {
			sc = s.pol.newSettleCall()
		}
		sc.settles = append(sc.settles, algorithms.Settle{Key: key, Limit: limit, At: at, Reserved: reserved, Cost: cost})
		sc.rules = append(sc.rules, o.rule)
	}
	sc = s.pol.appendReleases(sc, c)
	switch {
	case sc != nil && c.inVM: // decided in the VM: settled there too
		s.pol.settleLocally(sc)
	case sc != nil:
		s.vm.settle(sc)
	}
}

func (r *responseState) find(rule int) *responseRule {
	for i := range r.rules {
		if r.rules[i].rule == rule {
			return &r.rules[i]
		}
	}
	return nil
}

// OnResponseHeaders adds the rate-limit headers to an admitted response,
// and starts following it when a rule charges what it says; endOfStream:
// the response has no body, so it settles at once.
func (s *Stream) OnResponseHeaders(endOfStream bool) Action {
	if s.allowed && s.hasVerdict && s.pol.steps.has(stepHeaders) && s.quota == nil { // the quota reply has them
		var buf [5][2]string
		for _, h := range s.appendRateLimitHeaders(buf[:0], &s.verdict, "") {
			s.host.AddResponseHeader(h[0], h[1])
		}
	}
	if s.allowed && s.pol.steps.has(stepNearHeader) {
		s.addNearWarnings()
	}
	if s.allowed && s.charged() {
		s.startResponse()
		if endOfStream && s.resp.watching {
			s.endResponse(true)
		}
	}
	return Continue
}
