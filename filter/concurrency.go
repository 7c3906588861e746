package filter

import (
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
)

// Concurrency limits: a request acquires one slot of each in the call that
// decides it, all-or-nothing with the rule's other limits, and releases
// it with a settle call (algorithms.Release) once its stream ends,
// whatever the way: the response's end, a reset, the client gone, a local
// reply, a denial by another call. A release that never comes (the VM
// died, the call failed) leaves the slot to expire after the limit's
// max_duration. A request admitted by the failure mode acquired nothing
// and releases nothing.

// slotIDs hands out the slot ids of one process: one VM in a proxy.
var slotIDs struct {
	sync.Mutex
	base, n int64
}

// slotCounter is how many ids one base gives: 2^20.
const slotCounter = 1 << 20

// nextSlot returns a slot id no other stream of the VM holds: a random
// 32-bit base times 2^20 plus a counter, with a new base once the counter
// wraps. Two VMs share ids only if they drew one base (one chance in 2^32
// per pair), and every id is below 2^52, exact in the script's doubles.
func nextSlot() int64 {
	slotIDs.Lock()
	defer slotIDs.Unlock()
	if slotIDs.n%slotCounter == 0 {
		slotIDs.base, slotIDs.n = int64(rand.Uint32())*slotCounter, 1
	}
	id := slotIDs.base + slotIDs.n
	slotIDs.n++
	return id
}

// slotState is the concurrency step's state: the request's slot id, 0
// until its first concurrency limit joins a call.
type slotState struct {
	id int64
}

// slotID returns the request's slot id, drawn at its first concurrency
// limit: the one id its slots of every key take.
func (s *Stream) slotID() int64 {
	if s.slot == nil {
		s.slot = &slotState{}
	}
	if s.slot.id == 0 {
		s.slot.id = nextSlot()
	}
	return s.slot.id
}

// holdsSlots reports whether a call of the stream acquired slots that are
// not released yet.
func (s *Stream) holdsSlots() bool {
	for _, c := range s.calls {
		if c.acquired && !c.released {
			return true
		}
	}
	return false
}

// MustEnd reports whether the stream holds what its end must settle or
// release: an admitted request with a response cost or concurrency slots,
// or slots a denied request's calls took. The proxy must end it (OnDone,
// or Abandon once its context is gone) for them to be freed before the
// slots' max_duration.
func (s *Stream) MustEnd() bool {
	return s.allowed && s.charged() || s.holdsSlots()
}

// noteAcquired records, once c's reply is in, whether it acquired slots:
// Redis admitted it, and it carries a slot id.
func (c *call) noteAcquired() {
	c.acquired = c.slot != 0 && !c.decision.Blocked && c.decision.Allowed()
}

// isSlot reports whether c.origins[i] decided a concurrency limit: for a
// choice's position, the limit Redis picked.
func (c *call) isSlot(i int) bool {
	if i < len(c.checks) {
		return c.checks[i].Limit.Algorithm == algorithms.Concurrency
	}
	return c.origins[i].picked.Algorithm == algorithms.Concurrency
}

// appendReleases adds to sc, new when nil, the release of every slot c
// acquired and has not released.
func (p *policy) appendReleases(sc *settleCall, c *call) *settleCall {
	if !c.acquired || c.released {
		return sc
	}
	c.released = true
	for i := range c.origins {
		if !c.isSlot(i) {
			continue
		}
		key, limit, _, ok := c.target(i, p.cfg)
		if !ok {
			continue
		}
		if sc == nil {
			sc = p.newSettleCall()
		}
		sc.settles = append(sc.settles, algorithms.Release(key, limit, c.slot))
		sc.rules = append(sc.rules, c.origins[i].rule)
	}
	return sc
}

// releaseSlots sends the release of the slots c acquired, if any.
func (p *policy) releaseSlots(c *call) {
	if sc := p.appendReleases(nil, c); sc != nil {
		p.vm.settle(sc)
	}
}

// detach keeps a call whose stream ends while it is out: its reply then
// releases what it acquired. Through Webdis the SDK drops that reply (the
// stream's context is gone), so a call still out at the sweep is released
// blind: a release of a slot never taken frees nothing.
func (p *policy) detach(c *call) {
	c.stream, c.detached = nil, p
}

// onDetachedReply releases what a detached call acquired.
func (p *policy) onDetachedReply(c *call, r scriptReply) {
	p.vm.untrack(c)
	if r.ok && p.parseReply(c, r) == nil {
		c.replied = true
		c.noteAcquired()
		p.releaseSlots(c)
	} else {
		c.err = errDetached
	}
	p.fillDetachedLeases(c)
}

// sweepDetached releases blind a detached call overdue by a second past
// the Redis timeout: at each choice position, the concurrency limit a tier
// holds there, since what Redis picked is unknown.
func (p *policy) sweepDetached(c *call, now time.Time) {
	if !p.vm.late(c.sentAt, now) {
		return
	}
	p.vm.untrack(c)
	c.err = errDetached
	p.fillDetachedLeases(c)
	if c.slot == 0 {
		return
	}
	for i := len(c.checks); i < len(c.origins); i++ {
		o := &c.origins[i]
		o.picked = algorithms.Limit{}
		for _, level := range p.cfg.Rules[o.rule].Levels() {
			if o.limit < len(level.Limits) && level.Limits[o.limit].Limit.Algorithm == algorithms.Concurrency {
				o.picked = level.Limits[o.limit].Limit
			}
		}
	}
	c.acquired = true
	p.releaseSlots(c)
}

// errDetached marks a detached call that has no decision to act on.
var errDetached = errors.New("the stream ended before the reply")
