package filter

import (
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// localLimiter decides a VM's requests while Redis cannot (failure_mode:
// local): the script's algorithms, through algorithms.Model, on the VM's
// clock, with every limit scaled to the VM's share. Its state is bounded:
// at most MaxKeys limit states (localTable), and a state is forgotten once
// the limit is back to full (its ResetAfter has passed), so it no longer
// affects a decision. A state that still denies is never pushed out by a
// new key, so a flood of other keys cannot re-admit a denied client. The
// state outlives an outage until it drains: the next outage starts from
// what this VM admitted in the last.
type localLimiter struct {
	cfg   *config.LocalFallback
	model *algorithms.Model
	table *localTable

	allowed, denied, evicted, unheld Counter
	states                           Gauge

	// Scratch for one decision, reused.
	checks []algorithms.Check
	at     []int   // per origin of the call, its check, or -1 when unused
	idles  []int64 // per settle of a call, until when its state matters
	peek   [1]algorithms.Check
}

func newLocalLimiter(cfg *config.Config, h PluginHost) *localLimiter {
	if cfg.Local == nil {
		return nil
	}
	return &localLimiter{cfg: cfg.Local, model: algorithms.NewModel(), table: newLocalTable(cfg.Local.MaxKeys),
		allowed: h.Counter("ratelimit.failure_mode.local_allowed"),
		denied:  h.Counter("ratelimit.failure_mode.local_denied"),
		evicted: h.Counter("ratelimit.failure_mode.local_evicted"),
		unheld:  h.Counter("ratelimit.failure_mode.local_unheld"),
		states:  h.Gauge("ratelimit.failure_mode.local_states")}
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
	d := l.decideChecks(us)
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

// decideChecks decides l.checks at now (µs) from the local state, and
// keeps each check's state.
func (l *localLimiter) decideChecks(now int64) algorithms.Decision {
	d := l.model.Decide(now, nil, l.checks)
	l.table.pin()
	for i, chk := range l.checks {
		r := d.Results[i]
		if chk.CheckOnly {
			chk.Cost = 1
		}
		retry := time.Duration(-1)
		if !r.Allowed {
			retry = r.RetryAfter
		}
		l.keep(chk.Key, l.rankAfter(chk, r.Remaining, retry, now), now+r.ResetAfter.Microseconds(), now)
	}
	return d
}

// rankAfter ranks chk's state once a decision at now left remaining: by
// its use while it admits chk again, else by when it does, retry from now
// when chk was denied (otherwise retry < 0, and a peek finds it).
func (l *localLimiter) rankAfter(chk algorithms.Check, remaining int64, retry time.Duration, now int64) int64 {
	if remaining >= chk.Cost {
		return rankOfUse(config.Capacity(chk.Limit), remaining)
	}
	if retry < 0 {
		// remaining < Cost: the same check is denied, so it writes nothing.
		l.peek[0] = algorithms.Check{Key: chk.Key, Limit: chk.Limit, Cost: chk.Cost}
		retry = l.model.Decide(now, nil, l.peek[:]).Results[0].RetryAfter
	}
	return rankDenying + now + max(retry.Microseconds(), 0)
}

// keep records key's state at now: it matters until idle at least, and
// ranks rank, or as it ranked while that still denies (what it denied, it
// still does: use only grew). A new key is held unless every held state
// still denies; then its state is forgotten, as if the key had never come
// (it was decided as a fresh one), and counted.
func (l *localLimiter) keep(key string, rank, idle, now int64) {
	i, held := l.table.index[key]
	if held {
		if old := l.table.entries[i].rank; deniesAt(old, now) {
			rank = max(rank, old)
		}
		l.table.update(i, rank, idle)
		return
	}
	if idle <= now { // the state is empty: nothing to remember
		l.model.Forget(key) // a check may have left an empty entry
		return
	}
	victim, pushed, ok := l.table.add(key, rank, idle, now)
	if pushed {
		l.model.Forget(victim.key)
		l.states.Add(-1)
		if victim.idle > now {
			l.evicted.Increment(1)
		}
	}
	if !ok {
		l.model.Forget(key)
		l.unheld.Increment(1)
		return
	}
	l.states.Add(1)
}

// sweep forgets the states that no longer matter at now.
func (l *localLimiter) sweep(now time.Time) {
	us := now.UnixMicro()
	for i := l.table.len() - 1; i >= 0; i-- { // remove moves the last entry, already seen, to i
		if st := l.table.entries[i]; st.idle <= us {
			l.model.Forget(st.key)
			l.table.remove(i)
			l.states.Add(-1)
		}
	}
}

// size is the number of limit states held.
func (l *localLimiter) size() int { return l.table.len() }

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
	us := p.vm.host.Now().UnixMicro()
	l.idles = l.idles[:0]
	for i := range sc.settles {
		st := &sc.settles[i]
		st.Limit = l.cfg.Scale(st.Limit)
		l.idles = append(l.idles, l.settledIdle(st.Key, st.Limit, st.Cost-st.Reserved, us))
	}
	res := l.model.Settle(us, sc.settles)
	l.table.pin()
	for i := range sc.settles {
		if st := &sc.settles[i]; st.Cost > st.Reserved {
			unit := algorithms.Check{Key: st.Key, Limit: st.Limit, Cost: 1}
			l.keep(st.Key, l.rankAfter(unit, res.Results[i].Remaining, -1, us), l.idles[i], us)
		}
	}
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
	if i, ok := l.table.index[key]; ok {
		from = max(from, l.table.entries[i].idle)
	}
	t := (w + lim.Rate/2) / lim.Rate // the emission interval, as Limit rounds it
	return from + d*t
}
