package filter

import (
	"errors"
	"fmt"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/webdis"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// Plugin is one configured filter in one VM: the state its streams share.
type Plugin struct {
	cfg  *config.Config
	host PluginHost
	// webdis holds what calls through Webdis need; nil with the Redis ABI.
	webdis  *webdisCalls
	pending map[uint32]*call // callout id -> the call awaiting its reply
	// settles are the settle calls, shared with the _rules_ entries.
	settles *settleState
	// pendingShown is what the ratelimit.redis.pending gauge shows of
	// pending; it is brought up to date on each tick, not on each call,
	// as each update is a host call.
	pendingShown int
	decoder      redisproto.Decoder
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
	p := &Plugin{cfg: cfg, host: host, pending: map[uint32]*call{}}
	p.settles = &settleState{inFlight: map[uint32]*settleCall{}, errors: host.Counter("ratelimit.settle.errors")}
	// The script's reply is a flat array of 2 + 5 per limit integers, or
	// 7 per limit position of a choice.
	p.decoder.Limits = redisproto.Limits{MaxDepth: 4, MaxBulkLen: 1 << 16, MaxElements: 3 + 8*config.MaxRequestLimits}
	p.metrics = newMetrics(cfg, host)
	if cfg.Redis.Transport == config.TransportWebdis {
		r := &cfg.Redis
		p.webdis = &webdisCalls{headers: webdis.Headers(r.Path, r.Authority, r.Username, r.Password)}
	}
	p.errLog = throttledLog{host: host, every: 10 * time.Second}
	// The link sends AUTH and ACL WHOAMI only over the Redis ABI: it has
	// an initializer only with that transport.
	p.link = newRedisLink(cfg, host, host.DispatchRedis)
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
func (p *Plugin) Pending() int { return len(p.pending) }

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
	p.pending[id] = c
}

var errBreakerOpen = errors.New("circuit breaker open")

// OnRedisReply delivers the reply to a callout. ok is false on a network
// error or timeout, when reply is empty.
func (p *Plugin) OnRedisReply(calloutID uint32, ok bool, reply []byte) {
	p.onReply(calloutID, ok, reply, nil)
}

// onReply is OnRedisReply, with the reply given either as RESP or, when a
// transport read the script's integers itself, as ints.
func (p *Plugin) onReply(calloutID uint32, ok bool, reply []byte, ints []int64) {
	if p.link.isAuthReply(calloutID) {
		p.link.onAuthReply(ok, reply)
		return
	}
	if p.link.isIdentityReply(calloutID) {
		p.link.onIdentityReply(ok, reply)
		return
	}
	if p.isEpochReply(calloutID) {
		p.onEpochReply(ok, reply, ints)
		return
	}
	c := p.pending[calloutID]
	if c == nil {
		if sc := p.settles.inFlight[calloutID]; sc != nil {
			sc.p.onSettleReply(sc, ok, reply, ints)
		}
		return // else the stream ended, or the sweep failed the call already
	}
	if c.detached != nil {
		c.detached.onDetachedReply(c, ok, reply, ints)
		return
	}
	if owner := c.stream.p; owner != p {
		owner.onReply(calloutID, ok, reply, ints) // a _rules_ entry's call
		return
	}
	p.untrack(c)
	c.stream.now = time.Time{} // the reply's time: read if needed (clock)
	if !ok || p.metrics.sampleLatency() {
		p.metrics.latency.Record(uint64(c.stream.clock().Sub(c.sentAt).Milliseconds()))
	}
	if !ok {
		reason := "redis call failed or timed out"
		if c.failure != "" {
			reason, c.failure = c.failure, ""
		}
		p.fail(c, errors.New(reason))
		return
	}
	err := p.parseReply(c, reply, ints)
	if err != nil && !c.eval && isNoScript(err) {
		p.metrics.noscript.Increment(1)
		c.eval = true
		p.dispatch(c)
		return
	}
	if err != nil {
		p.link.onErrorReply(err, c.stream.clock())
		p.fail(c, err)
		return
	}
	p.breaker.failures = 0
	c.replied = true
	c.noteAcquired()
	c.stream.callDone(c, nil)
}

// parseReply reads the script's reply into c.decision: from ints when
// given, else in place when it is the flat array of integers the script
// returns, else (an error reply) through the decoder.
func (p *Plugin) parseReply(c *call, reply []byte, ints []int64) error {
	err := p.decodeReply(c, reply, ints)
	if err == nil {
		c.notePicks()
	}
	return err
}

func (p *Plugin) decodeReply(c *call, reply []byte, ints []int64) error {
	nb, n := len(c.blocks), len(c.checks)
	if ints != nil {
		return c.decision.FromIntsCall(ints, nb, n, c.choices)
	}
	if ok, err := c.decision.ParseRESPCall(reply, nb, n, c.choices); ok {
		return err
	}
	v, used, err := p.decoder.Decode(reply)
	if err == nil && used != len(reply) {
		err = fmt.Errorf("%d trailing bytes after the reply", len(reply)-used)
	}
	if err == nil {
		err = c.decision.ParseCall(v, nb, n, c.choices)
	}
	return err
}

func isNoScript(err error) bool {
	var rerr *redisproto.Error
	return errors.As(err, &rerr) && rerr.Prefix() == "NOSCRIPT"
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
	p.sweepSettles(now)
	p.sweepBodyWaits(now)
	p.pollEpoch(now)
	p.sweepLocal(now)
	p.sweepLeases(now)
	p.denyCache.sweep(now)
	for i := range p.routed {
		p.routed[i].plugin.sweepLeases(now)
		p.routed[i].plugin.denyCache.sweep(now)
	}
	for _, c := range p.pending {
		if c.detached != nil {
			c.detached.sweepDetached(c, now)
			continue
		}
		c.stream.now = now
		if owner := c.stream.p; now.Sub(c.sentAt) > owner.cfg.Redis.Timeout+time.Second {
			owner.untrack(c)
			owner.fail(c, errors.New("no reply from the host within the timeout"))
		}
	}
	return true
}

// showPending brings the pending gauge up to date.
func (p *Plugin) showPending() {
	if d := len(p.pending) - p.pendingShown; d != 0 {
		p.metrics.pending.Add(int64(d))
		p.pendingShown = len(p.pending)
	}
}

// untrack drops a call from the pending map; a reply for it is ignored.
func (p *Plugin) untrack(c *call) {
	if c.inFlight {
		delete(p.pending, c.calloutID)
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
