package filter

import (
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
)

// localLimiter decides a VM's requests while Redis cannot (failure_mode:
// local): the script's algorithms, through algorithms.Model, on the VM's
// clock, with every limit scaled to the VM's share. Its state is bounded:
// at most MaxKeys limit states, the oldest evicted first, and a state is
// forgotten once the limit is back to full (its ResetAfter has passed), so
// it no longer affects a decision. The state outlives an outage until it
// drains: the next outage starts from what this VM admitted in the last.
type localLimiter struct {
	cfg   *LocalFallback
	model *algorithms.Model
	// slots are the states held, in insertion order from next once full;
	// states maps each state's key to its slot.
	slots  []localState
	next   int
	states map[string]int

	allowed, denied, evicted Counter

	// Scratch for one decision, reused.
	checks []algorithms.Check
	at     []int // per owner of the call, its check, or -1 when unused
}

// localState is one limit state the Model holds.
type localState struct {
	key string
	// idle is when the state stops mattering, in µs since the epoch: from
	// then on the limit is full again, as for a key Redis has expired.
	idle int64
}

func newLocalLimiter(cfg *Config, h PluginHost) *localLimiter {
	if cfg.Local == nil {
		return nil
	}
	return &localLimiter{cfg: cfg.Local, model: algorithms.NewModel(), states: map[string]int{},
		allowed: h.Counter("ratelimit.failure_mode.local_allowed"),
		denied:  h.Counter("ratelimit.failure_mode.local_denied"),
		evicted: h.Counter("ratelimit.failure_mode.local_evicted")}
}

// decideLocally decides, in the VM, every enforced call that failed: it
// reports whether any was, and a denial when a request costs more than a
// limit's local capacity (reason cost_exceeds_capacity).
func (s *Stream) decideLocally() (local bool, over verdict) {
	l := s.p.local
	if l == nil {
		return false, verdict{}
	}
	for _, c := range s.calls {
		if c.err == nil || c.shadow {
			continue
		}
		local = true
		if over = l.decide(c, s.p.cfg, s.clock()); over.reason != 0 {
			return true, over
		}
	}
	return local, verdict{}
}

// decide fills c.decision as the script would have, from the local state:
// the call then counts as decided (c.local), and settles locally. A
// choice's positions take the request's tier, or the default: an
// operator's tier and override are in Redis.
func (l *localLimiter) decide(c *call, cfg *Config, now time.Time) verdict {
	l.checks, l.at = l.checks[:0], l.at[:0]
	for i := range c.owners {
		o := &c.owners[i]
		key, lim, checkOnly, ok := c.target(i, cfg)
		if !ok || lim.Algorithm == algorithms.Concurrency {
			// Unused, or in flight elsewhere: slots are Redis's to count,
			// and a VM alone cannot release what the others hold.
			l.at = append(l.at, -1)
			continue
		}
		cost := o.cost
		if i >= len(c.checks) {
			o.picked, o.tier = lim, max(o.tier, 0)
		}
		scaled := l.cfg.scale(lim)
		if !checkOnly && scaled.CheckCost(cost) != nil {
			return verdict{rule: o.rule, limit: o.limit, tier: max(o.tier, 0), reason: reasonCostExceedsCapacity}
		}
		l.at = append(l.at, len(l.checks))
		l.checks = append(l.checks, algorithms.Check{Key: key, Limit: scaled, Cost: cost, CheckOnly: checkOnly})
	}
	us := now.UnixMicro()
	d := l.model.Decide(us, nil, l.checks)
	c.decision.Now, c.decision.Blocked = us, false
	c.decision.Results, c.decision.Picks, c.decision.Picked = c.decision.Results[:0], c.decision.Picks[:0], c.decision.Picked[:0]
	c.decision.Granted = c.decision.Granted[:0]
	for _, i := range l.at {
		if i < 0 {
			c.decision.Results = append(c.decision.Results, algorithms.Result{Allowed: true, RetryAfter: -1})
			continue
		}
		r := d.Results[i]
		c.decision.Results = append(c.decision.Results, r)
		l.hold(l.checks[i].Key, us+r.ResetAfter.Microseconds(), us)
	}
	c.err, c.local = nil, true
	return verdict{}
}

// hold records that key's state matters until idle, at least: a new key
// takes a slot, evicting the oldest when all are taken.
func (l *localLimiter) hold(key string, idle, now int64) {
	if i, ok := l.states[key]; ok {
		l.slots[i].idle = max(l.slots[i].idle, idle)
		return
	}
	i := len(l.slots)
	if i < l.cfg.MaxKeys {
		l.slots = append(l.slots, localState{})
	} else {
		i, l.next = l.next, (l.next+1)%l.cfg.MaxKeys
		old := l.slots[i]
		l.model.Forget(old.key)
		delete(l.states, old.key)
		if old.idle > now {
			l.evicted.Increment(1)
		}
	}
	l.slots[i] = localState{key: key, idle: idle}
	l.states[key] = i
}

// sweep forgets the states that no longer matter at now, keeping the
// others in insertion order.
func (l *localLimiter) sweep(now time.Time) {
	us, n := now.UnixMicro(), len(l.slots)
	drop := 0
	for i := range l.slots {
		if l.slots[i].idle <= us {
			drop++
		}
	}
	if drop == 0 {
		return
	}
	kept := make([]localState, 0, n-drop)
	for j := range n {
		st := l.slots[(l.next+j)%n]
		if st.idle <= us {
			l.model.Forget(st.key)
			delete(l.states, st.key)
			continue
		}
		l.states[st.key] = len(kept)
		kept = append(kept, st)
	}
	l.slots, l.next = kept, 0
}

// size is the number of limit states held.
func (l *localLimiter) size() int { return len(l.slots) }

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
func (p *Plugin) settleLocally(sc *settleCall) {
	l := p.local
	us := p.host.Now().UnixMicro()
	for i := range sc.settles {
		st := &sc.settles[i]
		st.Limit = l.cfg.scale(st.Limit)
		if d := st.Cost - st.Reserved; d > 0 {
			l.hold(st.Key, l.settledIdle(st.Key, st.Limit, d, us), us)
		}
	}
	res := l.model.Settle(us, sc.settles)
	for i, r := range res.Results {
		p.metrics.rules[sc.rules[i]].response.count(r)
	}
	p.freeSettle(sc)
}

// settledIdle bounds, in µs, until when key's state matters once d more
// units are charged at now: a funnel empties d emission intervals later; a
// sliding log's new entry lasts a window, a counter's count two.
func (l *localLimiter) settledIdle(key string, lim algorithms.Limit, d, now int64) int64 {
	w := lim.Period.Microseconds()
	if lim.Algorithm != algorithms.Funnel {
		return now + 2*w
	}
	from := now
	if i, ok := l.states[key]; ok {
		from = max(from, l.slots[i].idle)
	}
	t := (w + lim.Rate/2) / lim.Rate // the emission interval, as Limit rounds it
	return from + d*t
}

// sweepLocal forgets the local states that no longer matter, in p and its
// _rules_ entries; each keeps its own.
func (p *Plugin) sweepLocal(now time.Time) {
	if p.local != nil {
		p.local.sweep(now)
	}
	for _, r := range p.routed {
		r.plugin.sweepLocal(now)
	}
}
