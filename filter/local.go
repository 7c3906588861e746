package filter

import (
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/localstate"
)

// localLimiter decides a VM's requests while Redis cannot (failure_mode:
// local): the script's algorithms on the VM's clock (package localstate),
// with every limit scaled to the VM's share. The state outlives an outage
// until it drains: the next outage starts from what this VM admitted in
// the last.
type localLimiter struct {
	cfg    *config.LocalFallback
	model  *algorithms.Model
	states *localstate.States

	allowed, denied Counter

	// Scratch for one decision, reused.
	checks []algorithms.Check
	at     []int // per origin of the call, its check, or -1 when unused
}

func newLocalLimiter(cfg *config.Config, h PluginHost) *localLimiter {
	if cfg.Local == nil {
		return nil
	}
	model := algorithms.NewModel()
	return &localLimiter{cfg: cfg.Local, model: model,
		allowed: h.Counter("ratelimit.failure_mode.local_allowed"),
		denied:  h.Counter("ratelimit.failure_mode.local_denied"),
		states: localstate.New(model, cfg.Local.MaxKeys,
			h.Counter("ratelimit.failure_mode.local_evicted"),
			h.Counter("ratelimit.failure_mode.local_unheld"),
			h.Gauge("ratelimit.failure_mode.local_states"))}
}

// decideLocally decides, in the VM, every enforced call that failed: it
// reports whether any was, and a denial when a request costs more than a
// limit's local capacity (reason cost_exceeds_capacity).
func (s *Stream) decideLocally() (local bool, over verdict) {
	l := s.pol.fallback
	if l == nil {
		return false, verdict{}
	}
	for _, c := range s.calls {
		if c.err == nil || c.shadow {
			continue
		}
		local = true
		if over = l.decide(c, s.pol.cfg, s.clock()); over.reason != 0 {
			return true, over
		}
	}
	return local, verdict{}
}

// decide fills c.decision as the script would have, from the local state:
// the call then counts as decided (c.inVM), and settles locally. A
// choice's positions take the request's tier, or the default: an
// operator's tier and override are in Redis.
func (l *localLimiter) decide(c *call, cfg *config.Config, now time.Time) verdict {
	l.checks, l.at = l.checks[:0], l.at[:0]
	for i := range c.origins {
		o := &c.origins[i]
		key, lim, checkOnly, ok := c.target(i, cfg)
		if !ok || lim.Algorithm == algorithms.Concurrency || lim.Algorithm == algorithms.CalendarWindow {
			// Unused, or in flight elsewhere: slots are Redis's to count,
			// and a VM alone cannot release what the others hold. A
			// calendar period is Redis's to place: the VM's clock is
			// monotonic, and a share of a month is no outage's limit.
			l.at = append(l.at, -1)
			continue
		}
		cost := o.cost
		if i >= len(c.checks) {
			o.picked, o.tier = lim, max(o.tier, 0)
		}
		scaled := l.cfg.Scale(lim)
		if !checkOnly && scaled.CheckCost(cost) != nil {
			return verdict{rule: o.rule, limit: o.limit, tier: max(o.tier, 0), reason: reasonCostExceedsCapacity}
		}
		l.at = append(l.at, len(l.checks))
		l.checks = append(l.checks, algorithms.Check{Key: key, Limit: scaled, Cost: cost, CheckOnly: checkOnly})
	}
	us := now.UnixMicro()
	d := l.states.Decide(us, l.checks)
	c.decision.Now, c.decision.Blocked = us, false
	c.decision.Results, c.decision.Picks, c.decision.Picked = c.decision.Results[:0], c.decision.Picks[:0], c.decision.Picked[:0]
	c.decision.Granted = c.decision.Granted[:0]
	for _, i := range l.at {
		if i < 0 {
			c.decision.Results = append(c.decision.Results, algorithms.Result{Allowed: true, RetryAfter: -1})
			continue
		}
		c.decision.Results = append(c.decision.Results, d.Results[i])
	}
	c.err, c.inVM = nil, true
	return verdict{}
}

// sweep forgets the states that no longer matter at now.
func (l *localLimiter) sweep(now time.Time) { l.states.Sweep(now.UnixMicro()) }

// size is the number of limit states held.
func (l *localLimiter) size() int { return l.states.Len() }

// count counts a request decided locally.
func (l *localLimiter) count(denied bool) {
	if denied {
		l.denied.Increment(1)
	} else {
		l.allowed.Increment(1)
	}
}

// settleLocally applies the settles of a locally decided call to the
// local state, with the limits scaled as at the decision: nothing was
// reserved in Redis, so nothing is settled there.
func (p *policy) settleLocally(sc *settleCall) {
	l := p.fallback
	for i := range sc.settles {
		sc.settles[i].Limit = l.cfg.Scale(sc.settles[i].Limit)
	}
	res := l.states.Settle(p.vm.host.Now().UnixMicro(), sc.settles)
	for i, r := range res.Results {
		p.metrics.rules[sc.rules[i]].response.count(r)
	}
	p.freeSettle(sc)
}
