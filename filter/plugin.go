package filter

import (
	"errors"
	"fmt"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// Plugin is one configured filter in one VM: the state its streams share.
type Plugin struct {
	cfg      *config.Config
	host     PluginHost
	tr       transport // shared with the _rules_ entries' Plugins
	callouts *callouts // shared with the _rules_ entries' Plugins
	// settles are the settle calls, shared with the _rules_ entries.
	settles *settleState
	// pendingShown is what the ratelimit.redis.pending gauge shows of
	// pending; it is brought up to date on each tick, not on each call,
	// as each update is a host call.
	pendingShown int
	metrics      metrics
	errLog       throttledLog
	breaker      breaker
	// denyCache answers keys Redis denied until their Retry-After; nil
	// when disabled.
	denyCache *denyCache
	// local decides while Redis cannot (failure_mode: local); else nil.
	local *localLimiter
	epoch epochPoll  // on the top-level Plugin
	link  *redisLink // shared with the _rules_ entries' Plugins
	// routed are the _rules_ entries, each with its own Plugin.
	routed []routed

	freeStreams []*Stream
	live        int // streams handed out and not yet done
	// bodyRules: a rule reserves from the request body; waiting are the
	// streams waiting for theirs (on the top-level Plugin).
	bodyRules bool
	waiting   []*Stream
	// headers are the header pieces of each rule, rendered once.
	headers []ruleHeaders
	// leases are each rule's leases (nil for a rule without, or all nil).
	leases       []*leaseTable
	leaseMetrics leaseMetrics
	// throttle holds what throttles delay (on the top-level Plugin, when
	// a rule has one and the host can change the tick); lastWork is when
	// the periodic work of OnTick last ran.
	throttle *throttleState
	lastWork time.Time
}

// breaker counts consecutive failures; see BreakerConfig.
type breaker struct {
	failures  int
	openUntil time.Time
	// epoch counts the failures counted so far. A call remembers it when
	// sent, and its failure counts only if no other failure was counted
	// since: the calls one Redis timeout fails at once (Higress's client
	// fails every pending call of a connection together) count once.
	epoch uint64
}

// NewPlugin returns a Plugin for a parsed configuration.
func NewPlugin(cfg *config.Config, host PluginHost) *Plugin {
	p := newPlugin(cfg, host)
	if p.throttled() { // held requests are the top-level Plugin's
		if p.throttle = newThrottleState(host); p.throttle == nil {
			host.Log(LogWarn, "ratelimit: this host cannot change the tick period: throttled rules deny instead of holding")
		}
	}
	return p
}

// newPlugin is NewPlugin for the top-level configuration or a _rules_
// entry's.
func newPlugin(cfg *config.Config, host PluginHost) *Plugin {
	p := &Plugin{cfg: cfg, host: host, callouts: newCallouts()}
	p.settles = &settleState{errors: host.Counter("ratelimit.settle.errors")}
	p.metrics = newMetrics(cfg, host)
	p.errLog = throttledLog{host: host, every: 10 * time.Second}
	p.tr = newTransport(cfg, host)
	// The link sends AUTH and ACL WHOAMI only over the Redis ABI: it has
	// an initializer only with that transport.
	p.link = newRedisLink(cfg, host, host.DispatchRedis, p.callouts)
	p.denyCache = newDenyCache(cfg.DenyCacheKeys)
	p.local = newLocalLimiter(cfg, host)
	p.epoch = newEpochPoll(cfg, host)
	p.leases = newLeaseTables(cfg)
	if p.leases != nil {
		p.leaseMetrics = newLeaseMetrics(host)
	}
	for _, r := range cfg.Rules {
		p.bodyRules = p.bodyRules || r.Response != nil && r.Response.Reserve.Body != ""
		p.headers = append(p.headers, newRuleHeaders(&r))
	}
	p.addMatchRules()
	return p
}

// throttled reports whether a rule, or a _rules_ entry's, has a throttle.
func (p *Plugin) throttled() bool {
	for _, r := range p.cfg.Rules {
		if r.Throttle != nil {
			return true
		}
	}
	for i := range p.routed {
		if p.routed[i].plugin.throttled() {
			return true
		}
	}
	return false
}

// Config returns the plugin's configuration.
func (p *Plugin) Config() *config.Config { return p.cfg }

// LiveStreams is how many streams were started and not yet ended: it
// returns to zero when traffic stops, however the proxy ends streams.
func (p *Plugin) LiveStreams() int { return p.live }

// Pending is how many Redis calls await a reply; it returns to zero when
// traffic stops.
func (p *Plugin) Pending() int { return p.callouts.calls }

// dispatch sends c's command and registers it; on failure the call fails at
// once, so no stream waits for a reply that will never come.
func (p *Plugin) dispatch(c *call) {
	c.sentAt, c.local = c.stream.clock(), false
	if c.sentAt.Before(p.breaker.openUntil) {
		p.metrics.skipped.Increment(1)
		c.stream.callDone(c, errBreakerOpen)
		return
	}
	if !p.link.usable(c.sentAt) {
		p.link.uninitialized.Increment(1)
		c.stream.callDone(c, errRedisUninitialized)
		return
	}
	c.epoch = p.breaker.epoch
	id, err := p.sendCall(c)
	if err != nil {
		p.fail(c, fmt.Errorf("dispatch: %w", err))
		return
	}
	c.calloutID, c.inFlight = id, true
	p.callouts.add(id, c)
	p.callouts.calls++
}

var errBreakerOpen = errors.New("circuit breaker open")

// onReply takes the reply to a script call.
func (c *call) onReply(_ *Plugin, r scriptReply) {
	if c.detached != nil {
		c.detached.onDetachedReply(c, r)
		return
	}
	c.stream.p.onCallReply(c, r)
}

// overdue fails a call overdue at now; a detached one is released blind.
func (c *call) overdue(_ *Plugin, now time.Time) {
	if c.detached != nil {
		c.detached.sweepDetached(c, now)
		return
	}
	c.stream.now = now
	if owner := c.stream.p; owner.late(c.sentAt, now) {
		owner.untrack(c)
		owner.fail(c, errNoReply)
	}
}

// onCallReply reads a call's reply into its decision and completes it.
func (p *Plugin) onCallReply(c *call, r scriptReply) {
	p.untrack(c)
	c.stream.now = p.host.Now()
	p.metrics.latency.Record(uint64(c.stream.now.Sub(c.sentAt).Milliseconds()))
	if !r.ok {
		reason := "redis call failed or timed out"
		if r.failure != "" {
			reason = r.failure
		}
		p.fail(c, errors.New(reason))
		return
	}
	err := p.parseReply(c, r)
	if err != nil && noScript(&c.eval, err) {
		p.metrics.noscript.Increment(1)
		p.dispatch(c)
		return
	}
	if err != nil {
		p.link.onErrorReply(err, c.stream.now)
		p.fail(c, err)
		return
	}
	p.breaker.failures = 0
	c.replied = true
	c.noteAcquired()
	c.stream.callDone(c, nil)
}

// parseReply reads the script's reply into c.decision.
func (p *Plugin) parseReply(c *call, r scriptReply) error {
	ints, err := r.values(p.callouts)
	if err == nil {
		err = c.decision.FromIntsCall(ints, len(c.blocks), len(c.checks), c.choices)
	}
	if err == nil {
		c.notePicks()
	}
	return err
}

// fail records a failed call, opening the breaker after enough failures in
// a row; calls that were in flight together count as one (breaker.epoch).
func (p *Plugin) fail(c *call, err error) {
	p.metrics.redisErrors.Increment(1)
	p.errLog.log(LogWarn, "ratelimit: redis: "+err.Error())
	b, cfg := &p.breaker, p.cfg.Breaker
	if c.epoch != b.epoch {
		c.stream.callDone(c, err) // failed with calls already counted
		return
	}
	b.failures++
	b.epoch++
	if cfg.Failures > 0 && b.failures >= cfg.Failures {
		b.openUntil = c.stream.clock().Add(cfg.Backoff)
		p.metrics.opened.Increment(1)
		p.errLog.log(LogWarn, fmt.Sprintf("ratelimit: circuit breaker open for %v after %d consecutive Redis failures", cfg.Backoff, b.failures))
	}
	c.stream.callDone(c, err)
}

// OnTick releases the held requests that are due and, once per slowTick,
// fails calls overdue by a second past the Redis timeout, in case a host
// never answers: a stream is never left paused. It reports whether that
// periodic work ran, which the proxy's own per-tick work follows.
func (p *Plugin) OnTick() bool {
	now := p.host.Now()
	defer p.releaseHeld(now) // last: a resumed stream's context is then the effective one
	if !p.workDue(now) {
		return false
	}
	p.link.onTick(now)
	defer p.showPending()
	p.sendQueuedSettles()
	p.sweepBodyWaits(now)
	p.pollEpoch(now)
	p.sweepLocal(now)
	p.sweepLeases(now)
	p.denyCache.sweep(now)
	for i := range p.routed {
		p.routed[i].plugin.sweepLeases(now)
		p.routed[i].plugin.denyCache.sweep(now)
	}
	p.sweepCallouts(now)
	return true
}

// showPending brings the pending gauge up to date.
func (p *Plugin) showPending() {
	if d := p.callouts.calls - p.pendingShown; d != 0 {
		p.metrics.pending.Add(int64(d))
		p.pendingShown = p.callouts.calls
	}
}

// untrack drops a call from the callout table; a reply for it is ignored.
func (p *Plugin) untrack(c *call) {
	if c.inFlight {
		p.callouts.remove(c.calloutID)
		p.callouts.calls--
		c.inFlight = false
	}
}

// throttledLog logs at most one line per period, counting the rest.
type throttledLog struct {
	host       PluginHost
	every      time.Duration
	last       time.Time
	suppressed int
}

func (l *throttledLog) log(level LogLevel, msg string) {
	now := l.host.Now()
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		l.suppressed++
		return
	}
	if l.suppressed > 0 {
		msg = fmt.Sprintf("%s (%d similar messages suppressed)", msg, l.suppressed)
	}
	l.last, l.suppressed = now, 0
	l.host.Log(level, msg)
}
