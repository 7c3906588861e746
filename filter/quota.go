package filter

import (
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
	"github.com/redisrate/envoy-redis-ratelimit/filter/redisfail"
)

// The quota endpoint (config.QuotaEndpoint): a request to its path is
// decided as any request, by the rules that match it; once admitted it
// does not go on, but is answered here with what the caller has left of
// each limit of the endpoint's rules. Each rule's key is built from the
// request as the rule builds it, and read as ratelimitctl show reads a key
// (keyspace.PeekAt, charging nothing): one call for every rule (one per
// rule under redis.cluster_mode, whose keys differ in hash tag), then, only
// when a limit has nothing left, one settle of cost 0 that tells how far
// in debt it is (see keyspace.Debt). With redis.command: fcall both are
// the library's peek, flagged no-writes, so a full Redis answers them.
// Block keys are not read.

// maxQuotaCalls bounds the calls one endpoint request makes once admitted,
// whatever its path matched: a peek and a settle per listed rule under
// redis.cluster_mode (one of each otherwise), for at most
// config.MaxRequestLimits rules (each has a limit; they hold at most that
// many), each sent again once as EVAL on -NOSCRIPT under redis.command:
// evalsha. The request's own decision adds the calls of the rules that
// match it, as any request's.
const maxQuotaCalls = 2 * 2 * config.MaxRequestLimits

// quotaState is the quota step's state: the reading of one endpoint
// request's keys. A stream has one while it serves the endpoint's request.
type quotaState struct {
	rules       []keyspace.RuleQuota // per rule: its key is missing, or its state read
	calls       []*quotaCall
	outstanding int
	err         error // the first call that failed
}

// quotaCall reads some of the rules' keys: a peek, then a settle of
// cost 0 for the limits with nothing left (debt set).
type quotaCall struct {
	s        *Stream
	rules    []int // indexes into quotaState.rules
	peeks    []*keyspace.Peek
	debt     []quotaDebt // the settle's limits, when sent
	buf      []byte
	eval     bool
	id       uint32
	inFlight bool
	sentAt   time.Time
	key      string  // the first rule's key: its slot is the call's
	rt       routing // where it went
}

// quotaDebt is one limit a settle of cost 0 reads: limit of rules[rule].
type quotaDebt struct {
	rule, limit int
	settle      algorithms.Settle
}

// goOn lets an admitted request go on: Continue, or for the quota
// endpoint's request Pause, while its answer is read.
func (s *Stream) goOn() Action {
	if s.quota == nil {
		return Continue
	}
	s.answerQuota()
	return Pause
}

// resume is goOn outside the request headers' callback.
func (s *Stream) resume() {
	if s.goOn() == Continue {
		s.host.Resume()
	}
}

// answerQuota builds the endpoint's rules' keys from the request and sends
// the calls reading them.
func (s *Stream) answerQuota() {
	cfg, q := s.pol.cfg, s.quota
	var c *quotaCall
	for _, ri := range cfg.Quota.Rules {
		rule := &cfg.Rules[ri]
		key, ok := appendRuleKey(nil, cfg.Redis.Prefix, rule, &s.req, cfg.TrustedHops)
		q.rules = append(q.rules, keyspace.RuleQuota{Name: rule.Name, Missing: !ok})
		if !ok {
			continue
		}
		k := string(key)
		if c == nil || cfg.Redis.ClusterMode {
			c = &quotaCall{s: s, key: k}
			q.calls = append(q.calls, c)
		}
		c.rules = append(c.rules, len(q.rules)-1)
		c.peeks = append(c.peeks, keyspace.PeekAt(rule, k, max(s.localTier(rule, cfg.TrustedHops), 0)))
	}
	q.outstanding = len(q.calls)
	if q.outstanding == 0 {
		s.sendQuota()
		return
	}
	for _, c := range q.calls {
		c.send()
	}
}

// send sends the call's peek, or its settle once debt is set; a call that
// cannot be sent fails at once.
func (c *quotaCall) send() {
	now := c.s.vm.host.Now()
	c.s.vm.startRouting(&c.rt, c.key, now)
	c.sendAt(now, 0)
}

// sendAt sends the call at now to its node, to be answered within timeout
// (0: redis.timeout).
func (c *quotaCall) sendAt(now time.Time, timeout time.Duration) {
	p := c.s.pol
	node, err := p.vm.nodeFor(&c.rt, now)
	switch {
	case err != nil:
		c.done(err)
		return
	case now.Before(p.breakers[node].openUntil):
		p.metrics.skipped.Increment(1)
		c.done(errBreakerOpen)
		return
	case !p.vm.link.usable(now):
		c.done(redisfail.ErrUninitialized)
		return
	}
	f, inv := p.vm.tr.framing(), p.vm.invoke(c.eval)
	if c.debt == nil {
		c.buf = keyspace.AppendPeeks(c.buf[:0], f, inv, c.peeks)
	} else {
		settles := make([]algorithms.Settle, len(c.debt))
		for i := range c.debt {
			settles[i] = c.debt[i].settle
		}
		c.buf = algorithms.AppendPeekSettle(c.buf[:0], f, inv, settles)
	}
	id, err := p.vm.tr.send(node, c.buf, timeout)
	if err != nil {
		c.done(&redisfail.DispatchError{Err: err})
		return
	}
	c.id, c.sentAt, c.inFlight = id, now, true
	p.vm.callouts.add(id, c)
}

// onReply takes the peek's or the settle's reply.
func (c *quotaCall) onReply(vm *Plugin, r scriptReply) {
	c.untrack(vm)
	now := vm.host.Now()
	if !r.ok {
		vm.nodeFailed(c.rt.node, now)
	}
	ints, err := r.values(&vm.callouts)
	if err == nil && c.debt == nil {
		err = c.readPeek(ints)
	} else if err == nil {
		err = c.readDebt(ints)
	}
	if err != nil && noScript(&c.eval, err) {
		c.s.pol.metrics.noscript.Increment(1)
		c.send()
		return
	}
	if err != nil {
		switch act, ferr := vm.onClusterError(&c.rt, c, err, now); act {
		case sendAgain:
			c.sendAt(now, max(vm.deadlineLeft(c.rt.sentAt, now), time.Millisecond))
			return
		case queuedRetry:
			return
		case giveUp:
			err = ferr
		}
	}
	if err == nil && c.debt == nil && c.owing() {
		c.send()
		return
	}
	c.done(err)
}

// overdue fails the call when it is overdue at now.
func (c *quotaCall) overdue(vm *Plugin, now time.Time) {
	if vm.late(c.sentAt, now) {
		c.untrack(vm)
		vm.nodeFailed(c.rt.node, now)
		c.done(errNoReply)
	}
}

// resend sends the call again from the retry queue; past its deadline it
// fails.
func (c *quotaCall) resend(vm *Plugin, now time.Time) {
	if c.s == nil {
		return
	}
	left := vm.deadlineLeft(c.rt.sentAt, now)
	if left <= 0 {
		c.done(vm.waitErr(&c.rt))
		return
	}
	c.sendAt(now, left)
}

func (c *quotaCall) untrack(vm *Plugin) {
	if c.inFlight {
		vm.callouts.remove(c.id)
		c.inFlight = false
	}
}

// readPeek reads the peek's reply into the rules' states.
func (c *quotaCall) readPeek(ints []int64) error {
	states, err := keyspace.DecodePeeks(nil, ints, c.peeks)
	if err != nil {
		return err
	}
	for i, at := range c.rules {
		c.s.quota.rules[at].State = states[i]
	}
	return nil
}

// owing sets debt to the limits the peek found with nothing left whose
// algorithm can owe (keyspace.LimitState.MayOwe), and reports whether
// there are any.
func (c *quotaCall) owing() bool {
	c.debt = c.debt[:0]
	for _, at := range c.rules {
		for li, l := range c.s.quota.rules[at].State.Limits {
			if l.MayOwe() {
				c.debt = append(c.debt, quotaDebt{rule: at, limit: li, settle: algorithms.Settle{Key: l.Key, Limit: l.Decided}})
			}
		}
	}
	if len(c.debt) == 0 {
		c.debt = nil
	}
	c.eval = false
	return c.debt != nil
}

// readDebt reads the settle's reply: a negative Remaining is a debt, Used
// then beyond Limit (keyspace.Debt.Apply, without its second call: the
// peek's RetryAfter already says when a request of cost 1 fits again).
func (c *quotaCall) readDebt(ints []int64) error {
	var st algorithms.Settlement
	if err := st.FromInts(ints, len(c.debt)); err != nil {
		return err
	}
	for i, d := range c.debt {
		l := &c.s.quota.rules[d.rule].State.Limits[d.limit]
		if rem := st.Results[i].Remaining; rem < 0 {
			l.Remaining, l.Used = rem, l.Limit-rem
			l.Reset = max(l.Reset, l.RetryAfter)
		}
	}
	return nil
}

// done ends the call; the last one answers the request.
func (c *quotaCall) done(err error) {
	s := c.s
	if s == nil || s.quota == nil {
		return // the stream ended
	}
	q := s.quota
	if err != nil {
		p := s.pol
		p.metrics.redisErrors.Increment(1)
		p.vm.health.failNode(c.rt.node, p.vm.host.Now(), p.vm.nodeErr(&c.rt, err), p.failureMode)
		if q.err == nil {
			q.err = err
		}
	} else {
		s.vm.health.okNode(c.rt.node)
	}
	q.outstanding--
	if q.outstanding == 0 {
		s.sendQuota()
	}
}

// endQuota drops the calls of a stream that ends: a reply still in flight
// is ignored.
func (s *Stream) endQuota() {
	if s.quota == nil {
		return
	}
	for _, c := range s.quota.calls {
		c.untrack(s.vm)
		s.vm.retry.drop(&c.rt)
		c.s = nil
	}
	s.quota = nil
}

// sendQuota answers the endpoint's request: 200 and what each rule's key
// has left, or, when a call failed, failure_status (whatever failure_mode
// says: this request has no upstream to fail open to) and
// {"error":"ratelimit_unavailable"}. Either carries the rate-limit
// headers of the rules that decided the request itself.
func (s *Stream) sendQuota() {
	q, cfg := s.quota, s.pol.cfg
	var headers [][2]string
	if s.hasVerdict && cfg.Headers != config.HeadersNone {
		headers = s.appendRateLimitHeaders(headers, &s.verdict, "")
	}
	headers = append(headers, [2]string{"content-type", "application/json"}, [2]string{"cache-control", "no-store"})
	if q.err != nil {
		s.host.SendLocalReply(cfg.FailureStatus, headers, []byte(`{"error":"`+reasonUnavailable.String()+`"}`+"\n"))
		return
	}
	keyspace.ResetUnused(q.rules, s.clock())
	s.host.SendLocalReply(200, headers, keyspace.AppendQuotaJSON(nil, q.rules))
}
