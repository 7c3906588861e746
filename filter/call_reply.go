package filter

import (
	"errors"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/redisfail"
	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
)

// A script call's way out and back: dispatch registers it in the VM's
// callout table (callout.go); its reply, or the sweep, completes it.

// dispatch sends c's command and registers it; on failure the call fails at
// once, so no stream waits for a reply that will never come.
func (p *policy) dispatch(c *call) {
	c.sentAt, c.inVM = c.stream.clock(), false
	p.vm.startRouting(&c.rt, c.firstKey(), c.sentAt)
	p.send(c, c.sentAt, 0)
}

// send sends c at now to its node, to be answered within timeout (0:
// redis.timeout).
func (p *policy) send(c *call, now time.Time, timeout time.Duration) {
	node, err := p.vm.nodeFor(&c.rt, now)
	if err != nil {
		p.failUncounted(c, err)
		return
	}
	b := &p.breakers[node]
	if now.Before(b.openUntil) {
		p.metrics.skipped.Increment(1)
		c.stream.callDone(c, errBreakerOpen)
		return
	}
	if !p.vm.link.usable(now) {
		p.vm.link.uninitialized.Increment(1)
		p.vm.health.fail(now, p.vm.link.why(), p.failureMode)
		c.stream.callDone(c, redisfail.ErrUninitialized)
		return
	}
	c.epoch = b.epoch
	id, err := p.vm.sendCall(c, node, timeout)
	if err != nil {
		p.fail(c, &redisfail.DispatchError{Err: err})
		return
	}
	c.calloutID, c.inFlight = id, true
	p.vm.callouts.add(id, c)
	p.vm.callouts.calls++
}

// resend sends c again from the retry queue, with what is left of its
// deadline; past it, c fails with why its slot could not serve it.
func (c *call) resend(vm *Plugin, now time.Time) {
	p := c.stream.pol
	c.stream.now = now
	left := vm.deadlineLeft(c.rt.sentAt, now)
	if left <= 0 {
		p.failUncounted(c, vm.waitErr(&c.rt))
		return
	}
	p.send(c, now, left)
}

// firstKey is the call's first key: every key of a call hashes to its
// slot.
func (c *call) firstKey() string {
	switch {
	case len(c.blocks) > 0:
		return c.blocks[0]
	case len(c.checks) > 0:
		return c.checks[0].Key
	case len(c.choices) > 0:
		return c.choices[0].TierKey
	}
	return ""
}

var errBreakerOpen = errors.New("circuit breaker open")

// onReply takes the reply to a script call.
func (c *call) onReply(_ *Plugin, r scriptReply) {
	if c.detached != nil {
		c.detached.onDetachedReply(c, r)
		return
	}
	c.stream.pol.onCallReply(c, r)
}

// overdue fails a call overdue at now; a detached one is released blind.
func (c *call) overdue(vm *Plugin, now time.Time) {
	if c.detached != nil {
		c.detached.sweepDetached(c, now)
		return
	}
	c.stream.now = now
	if vm.late(c.sentAt, now) {
		vm.untrack(c)
		vm.nodeFailed(c.rt.node, now)
		c.stream.pol.fail(c, errNoReply)
	}
}

// onCallReply reads a call's reply into its decision and completes it.
func (p *policy) onCallReply(c *call, r scriptReply) {
	p.vm.untrack(c)
	c.stream.now = time.Time{} // the reply's time: read if needed (clock)
	if !r.ok || p.metrics.sampleLatency() {
		p.metrics.latency.Record(uint64(c.stream.clock().Sub(c.sentAt).Milliseconds()))
	}
	if !r.ok {
		err := r.failure
		if err == nil {
			err = errCallFailed
		}
		p.vm.nodeFailed(c.rt.node, c.stream.clock())
		p.fail(c, err)
		return
	}
	err := p.parseReply(c, r)
	if err != nil && noScript(&c.eval, err) {
		p.metrics.noscript.Increment(1)
		p.dispatch(c)
		return
	}
	if err != nil && p.onCallClusterError(c, err) {
		return
	}
	if err != nil {
		p.vm.link.onErrorReply(err, c.stream.clock())
		p.fail(c, err)
		return
	}
	p.breakers[c.rt.node].failures = 0
	p.vm.epoch.heard = true
	if !p.vm.link.identity.wrong { // sent before WHOAMI named the wrong user
		p.vm.health.okNode(c.rt.node)
	}
	c.replied = true
	c.noteAcquired()
	c.stream.callDone(c, nil)
}

// parseReply reads the script's reply into c.decision.
func (p *policy) parseReply(c *call, r scriptReply) error {
	ints, err := r.values(&p.vm.callouts)
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
// The VM's health logs it (redis_health.go).
func (p *policy) fail(c *call, err error) {
	p.metrics.redisErrors.Increment(1)
	p.vm.epoch.heard = true
	p.vm.health.failNode(c.rt.node, c.stream.clock(), p.vm.nodeErr(&c.rt, err), p.failureMode)
	b, cfg := &p.breakers[c.rt.node], p.cfg.Breaker
	if c.epoch != b.epoch {
		c.stream.callDone(c, err) // failed with calls already counted
		return
	}
	b.failures++
	b.epoch++
	if cfg.Failures > 0 && b.failures >= cfg.Failures {
		b.openUntil = c.stream.clock().Add(cfg.Backoff)
		p.metrics.opened.Increment(1)
		p.errLog.log(LogWarn, format.Sprintf("ratelimit: circuit breaker open for %v after %d consecutive Redis failures", cfg.Backoff, b.failures))
	}
	c.stream.callDone(c, err)
}

// failUncounted fails a call that Redis Cluster did not run (its slot
// stayed migrating or down, moved too often, or has a node not listed):
// not a failure of the node, so not counted by its breaker.
func (p *policy) failUncounted(c *call, err error) {
	p.metrics.redisErrors.Increment(1)
	p.vm.epoch.heard = true
	p.vm.health.failNode(c.rt.node, c.stream.clock(), p.vm.nodeErr(&c.rt, err), p.failureMode)
	c.stream.callDone(c, err)
}

// onCallClusterError follows a -MOVED at once, or queues the call on
// -ASK, -TRYAGAIN or -CLUSTERDOWN; it reports whether err was that.
func (p *policy) onCallClusterError(c *call, err error) bool {
	now := c.stream.clock()
	act, failErr := p.vm.onClusterError(&c.rt, c, err, now)
	switch act {
	case sendAgain:
		p.vm.speedUp() // for the map load the move asked for
		p.send(c, now, max(p.vm.deadlineLeft(c.rt.sentAt, now), time.Millisecond))
	case giveUp:
		p.failUncounted(c, failErr)
	}
	return act != notCluster
}

// untrack drops a call from the callout table; a reply for it is ignored.
func (p *Plugin) untrack(c *call) {
	if c.inFlight {
		p.callouts.remove(c.calloutID)
		p.callouts.calls--
		c.inFlight = false
	}
}
