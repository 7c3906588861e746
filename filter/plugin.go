package filter

import (
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// Plugin is the filter in one VM (one proxy worker): what every request
// of the VM shares, whichever configuration applies to it. It holds the
// Redis side (the transport, the link, the callout table, the settles,
// the epoch poll), the streams, the throttle's held requests and the body
// waits; and the policies, one per configuration: the top-level one, then
// one per Higress _rules_ entry (policy.go).
type Plugin struct {
	// cfg is the top-level configuration; its redis object is every
	// policy's (config's checkSharedParts refuses _rules_ entries whose
	// redis differs).
	cfg      *config.Config
	host     PluginHost
	tr       transport
	callouts callouts
	settles  settleState
	link     *redisLink
	health   redisHealth
	epoch    epochPoll
	// policies are the configurations: [0] the top level, then each
	// _rules_ entry in order.
	policies []*policy
	// degradeHeaders are every policy's degrade headers, which a request
	// never brings itself (degrade.go).
	degradeHeaders []string
	// pendingShown is what the ratelimit.redis.pending gauge shows of
	// callouts.calls; it is brought up to date on each tick, not on each
	// call, as each update is a host call.
	pendingShown int

	freeStreams []*Stream
	live        int       // streams handed out and not yet done
	waiting     []*Stream // streams waiting for their request body
	// throttle holds what throttles delay (when a rule has one and the
	// host can change the tick); lastWork is when the periodic work of
	// OnTick last ran.
	throttle *throttleState
	lastWork time.Time
	// tick is the tick period's state (cluster_retry.go); retry holds
	// the callouts Redis Cluster asked to send again; router routes each
	// call to its slot's node, nil without redis.nodes (cluster_route.go).
	tick   tickState
	retry  retryQueue
	router *router
}

// NewPlugin returns a Plugin for a parsed configuration.
func NewPlugin(cfg *config.Config, host PluginHost) *Plugin {
	p := &Plugin{cfg: cfg, host: host}
	p.callouts.init()
	p.settles.errors = host.Counter("ratelimit.settle.errors")
	p.health = newRedisHealth(&cfg.Redis, host)
	p.router = newRouter(cfg, host)
	p.policies = append(p.policies, newPolicy(p, cfg, nil))
	p.tr = newTransport(cfg, host)
	p.tick.ticker, _ = host.(Ticker)
	// The link sends AUTH and ACL WHOAMI only over the Redis ABI: it has
	// an initializer only with that transport.
	p.link = newRedisLink(cfg, host, host.DispatchRedis, &p.callouts)
	p.link.health, p.link.mode, p.link.routed = &p.health, p.top().failureMode, p.router != nil
	p.epoch = newEpochPoll(cfg, host)
	for i := range cfg.MatchRules {
		mr := &cfg.MatchRules[i]
		p.policies = append(p.policies, newPolicy(p, mr.Config, mr))
	}
	p.degradeHeaders = allDegradeHeaders(p.policies)
	if p.throttled() {
		if p.throttle = newThrottleState(host); p.throttle == nil {
			host.Log(LogWarn, "ratelimit: this host cannot change the tick period: throttled rules deny instead of holding")
		}
	}
	return p
}

// top is the top-level configuration's policy.
func (p *Plugin) top() *policy { return p.policies[0] }

// throttled reports whether a rule of any policy has a throttle.
func (p *Plugin) throttled() bool {
	for _, pol := range p.policies {
		for _, r := range pol.cfg.Rules {
			if r.Throttle != nil {
				return true
			}
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

// OnTick releases the held requests that are due and, once per slowTick,
// fails calls overdue by a second past the Redis timeout, in case a host
// never answers: a stream is never left paused. It reports whether that
// periodic work ran, which the proxy's own per-tick work follows.
func (p *Plugin) OnTick() bool {
	now := p.host.Now()
	defer p.releaseDelayed(now) // last: a resumed stream's context is then the effective one
	if p.router != nil {
		p.router.load.onTick(p, now)
	}
	p.runRetries(now)
	if !p.workDue(now) {
		return false
	}
	p.link.onTick(now)
	defer p.showPending()
	p.sendQueuedSettles()
	p.sweepBodyWaits(now)
	p.pollEpoch(now)
	for _, pol := range p.policies {
		pol.sweep(now)
	}
	p.sweepCallouts(now)
	return true
}

// showPending brings the pending gauge up to date.
func (p *Plugin) showPending() {
	if d := p.callouts.calls - p.pendingShown; d != 0 {
		p.top().metrics.pending.Add(int64(d))
		p.pendingShown = p.callouts.calls
	}
}

// Done ends the plugin: it takes back what the VM added to the gauges
// that Envoy sums over VMs and keeps after a VM is gone.
func (p *Plugin) Done() {
	p.health.done()
}
