package filter

import (
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
	"github.com/redisrate/envoy-redis-ratelimit/filter/redisfail"
	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
)

// epochPoll is the VM's Redis probe, and brings an operator's changes (an
// unblock, a reset, a tier or an override: see ratelimitctl) to its deny
// caches. Every change bumps the epoch key (EpochKey); on each tick (1 s)
// the VM reads it, in one script call, unless the last read is still in
// flight: at most one Redis call per VM per second. When the epoch moved,
// every policy forgets what it cached: its deny cache, and its leases
// end; a change is therefore seen within one tick and one Redis round
// trip.
//
// The read is also the VM's health probe: its reply, or its failure,
// makes the VM healthy or failing and counts in ratelimit.redis.errors as
// a decision's would (redis_health.go), so a VM that serves no request
// still says whether Redis answers it. A tick after which a decision's
// call was answered, or failed, sends no read unless something is cached:
// the decisions said how Redis is, and a loaded VM pays no probe. No read
// is sent while a circuit breaker of the VM is open (the failures that
// opened it made the VM failing; the first read after the backoff says
// again), nor while the link is unusable, which then counts as a failure
// as a decision not sent does.
type epochPoll struct {
	key      string
	buf      []byte
	eval     bool // -NOSCRIPT was seen: the next read sends the script
	id       uint32
	inFlight bool
	sentAt   time.Time
	rt       routing // the epoch key's slot and node
	seen     int64
	// known: seen holds a value read; the first read clears, and so does
	// the first after a failed read or from another node (with
	// redis.nodes: the epoch's slot moved, or its replica took over): a
	// failover may have lost the last bump, and the next one brought the
	// epoch back to seen.
	known bool
	from  int // the node seen was read from
	// heard: a decision's call was answered, or failed, since the last
	// tick (call_reply.go).
	heard   bool
	polls   Counter // ratelimit.epoch.polls: reads sent
	changes Counter // ratelimit.epoch.changes: reads that found it moved (the first too)
	failed  Counter // ratelimit.epoch.failed: reads that failed
}

func newEpochPoll(cfg *config.Config, host PluginHost) epochPoll {
	return epochPoll{key: keyspace.EpochKey(cfg.Redis.Prefix), polls: host.Counter("ratelimit.epoch.polls"),
		changes: host.Counter("ratelimit.epoch.changes"), failed: host.Counter("ratelimit.epoch.failed")}
}

// breakerOpen reports whether a circuit breaker of any policy is open at
// now: for node, or with node -1 for any node.
func (p *Plugin) breakerOpen(now time.Time, node int) bool {
	for _, pol := range p.policies {
		for i := range pol.breakers {
			if (node < 0 || i == node) && now.Before(pol.breakers[i].openUntil) {
				return true
			}
		}
	}
	return false
}

// cached reports whether a policy's deny cache holds entries, or a lease
// table keys: an operator's change must then reach it.
func (p *Plugin) cached() bool {
	for _, pol := range p.policies {
		if pol.denyCache.size() > 0 || pol.leasing() {
			return true
		}
	}
	return false
}

// pollEpoch reads the epoch, once per tick, when no read is in flight
// (one overdue past the timeout fails), no breaker is open, the link is
// usable, and something is cached or no decision was heard of since the
// last tick.
func (p *Plugin) pollEpoch(now time.Time) {
	e := &p.epoch
	heard := e.heard
	e.heard = false
	if e.overdue(p, now); e.inFlight || e.rt.queued || heard && !p.cached() {
		return
	}
	p.startRouting(&e.rt, e.key, now)
	p.sendEpoch(now, 0)
}

// sendEpoch sends the read at now to the epoch key's node, to be
// answered within timeout (0: redis.timeout), unless that node's breaker
// is open or the link is unusable.
func (p *Plugin) sendEpoch(now time.Time, timeout time.Duration) {
	e := &p.epoch
	node, err := p.nodeFor(&e.rt, now)
	if err != nil {
		p.probeFailed(now, err)
		return
	}
	if p.breakerOpen(now, node) {
		return
	}
	if !p.link.usable(now) {
		if p.link.ready { // a failed init said so itself
			p.health.fail(now, p.link.why(), p.top().failureMode)
		}
		return
	}
	e.buf = algorithms.AppendEpoch(e.buf[:0], p.tr.framing(), p.invoke(e.eval), e.key)
	id, err := p.tr.send(node, e.buf, timeout)
	e.polls.Increment(1)
	if err != nil {
		p.probeFailed(now, &redisfail.DispatchError{Err: err})
		return
	}
	e.id, e.inFlight, e.sentAt = id, true, now
	p.callouts.add(id, e)
}

// onReply takes the epoch read's reply.
func (e *epochPoll) onReply(vm *Plugin, r scriptReply) { vm.onEpochReply(r) }

// resend sends the read again from the retry queue; past its deadline it
// fails.
func (e *epochPoll) resend(vm *Plugin, now time.Time) {
	left := vm.deadlineLeft(e.rt.sentAt, now)
	if left <= 0 {
		vm.probeFailed(now, vm.waitErr(&e.rt))
		return
	}
	vm.sendEpoch(now, left)
}

// overdue fails the read in flight when it is overdue at now: the next
// poll sends another.
func (e *epochPoll) overdue(vm *Plugin, now time.Time) {
	if e.inFlight && vm.late(e.sentAt, now) {
		vm.callouts.remove(e.id)
		e.inFlight = false
		vm.nodeFailed(e.rt.node, now)
		vm.probeFailed(now, errNoReply)
	}
}

// probeFailed counts a failed epoch read, as a failed call too.
func (p *Plugin) probeFailed(now time.Time, err error) {
	p.epoch.failed.Increment(1)
	p.epoch.known = false
	p.top().metrics.redisErrors.Increment(1)
	p.health.failNode(p.epoch.rt.node, now, p.nodeErr(&p.epoch.rt, err), p.top().failureMode)
}

// onEpochReply reads the epoch, and clears the deny caches when it moved.
func (p *Plugin) onEpochReply(r scriptReply) {
	e := &p.epoch
	p.callouts.remove(e.id)
	e.inFlight = false
	now := p.host.Now()
	if !r.ok {
		err := r.failure
		if err == nil {
			err = errCallFailed
		}
		p.nodeFailed(e.rt.node, now)
		p.probeFailed(now, err)
		return
	}
	ints, err := r.values(&p.callouts)
	if err == nil && len(ints) != 1 {
		err = format.Errorf("%w: %v", algorithms.ErrUnexpectedReply, ints)
	}
	if err != nil {
		if noScript(&e.eval, err) { // the next read sends the script
			return
		}
		switch act, ferr := p.onClusterError(&e.rt, e, err, now); act {
		case sendAgain:
			p.sendEpoch(now, max(p.deadlineLeft(e.rt.sentAt, now), time.Millisecond))
			return
		case queuedRetry:
			return
		case giveUp:
			p.probeFailed(now, ferr)
			return
		}
		p.link.onErrorReply(err, now)
		p.probeFailed(now, err)
		return
	}
	e.eval = false
	switch {
	case p.link.identity.wrong: // answered, but as the wrong user
		p.health.fail(now, p.link.why(), p.top().failureMode)
	case !p.breakerOpen(now, e.rt.node): // a read sent before its node's breaker opened says nothing
		p.health.okRead(e.rt.node)
	}
	v := ints[0]
	if e.known && v == e.seen && e.rt.node == e.from {
		return
	}
	e.seen, e.known, e.from = v, true, e.rt.node
	e.changes.Increment(1)
	for _, pol := range p.policies {
		pol.forget()
	}
}
