package filter

import (
	"fmt"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
)

// epochPoll brings an operator's changes (an unblock, a reset, a tier or
// an override: see ratelimitctl) to this VM's deny caches. Every change
// bumps the epoch key (EpochKey); on each tick (1 s) while a deny cache
// of the plugin holds entries, the VM reads it, in one script call, and
// when it moved, every policy forgets what it cached: its deny cache,
// and its leases end. A change is
// therefore seen within one tick and one Redis round trip, for at most
// one Redis call per VM per second, and none while nothing is cached.
type epochPoll struct {
	key      string
	buf      []byte
	eval     bool // -NOSCRIPT was seen: the next read sends the script
	id       uint32
	inFlight bool
	sentAt   time.Time
	seen     int64
	known    bool // seen holds a value read; the first read clears
	polls    Counter
	changes  Counter
}

func newEpochPoll(cfg *config.Config, host PluginHost) epochPoll {
	return epochPoll{key: keyspace.EpochKey(cfg.Redis.Prefix), polls: host.Counter("ratelimit.epoch.polls"),
		changes: host.Counter("ratelimit.epoch.changes")}
}

// cached reports whether a policy's deny cache holds entries, or a lease
// table keys.
func (p *Plugin) cached() bool {
	for _, pol := range p.policies {
		if pol.cached() {
			return true
		}
	}
	return false
}

// pollEpoch reads the epoch, once per tick, when something is cached and
// no read is in flight (one overdue past the timeout is dropped).
func (p *Plugin) pollEpoch(now time.Time) {
	e := &p.epoch
	if e.overdue(p, now); e.inFlight {
		return
	}
	if !p.cached() || now.Before(p.top().breaker.openUntil) || !p.link.usable(now) {
		return
	}
	e.buf = algorithms.AppendEpoch(e.buf[:0], p.tr.framing(), p.invoke(e.eval), e.key)
	id, err := p.tr.send(e.buf)
	if err != nil {
		p.top().errLog.log(LogWarn, "ratelimit: redis: epoch: dispatch: "+err.Error())
		return
	}
	e.id, e.inFlight, e.sentAt = id, true, now
	p.callouts.add(id, e)
	e.polls.Increment(1)
}

// onReply takes the epoch read's reply.
func (e *epochPoll) onReply(vm *Plugin, r scriptReply) { vm.onEpochReply(r) }

// overdue drops the read in flight when it is overdue at now: the next
// poll sends another.
func (e *epochPoll) overdue(vm *Plugin, now time.Time) {
	if e.inFlight && vm.late(e.sentAt, now) {
		vm.callouts.remove(e.id)
		e.inFlight = false
	}
}

// onEpochReply reads the epoch, and clears the deny caches when it moved.
func (p *Plugin) onEpochReply(r scriptReply) {
	e := &p.epoch
	p.callouts.remove(e.id)
	e.inFlight = false
	ints, err := r.values(&p.callouts)
	if err == nil && len(ints) != 1 {
		err = fmt.Errorf("unexpected reply %v", ints)
	}
	if err != nil {
		noScript(&e.eval, err) // the next read sends the script
		p.top().errLog.log(LogWarn, "ratelimit: redis: epoch: "+err.Error())
		return
	}
	e.eval = false
	v := ints[0]
	if e.known && v == e.seen {
		return
	}
	e.seen, e.known = v, true
	e.changes.Increment(1)
	for _, pol := range p.policies {
		pol.forget()
	}
}
