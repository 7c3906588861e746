package filter

import (
	"errors"
	"fmt"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// epochPoll brings an operator's changes (an unblock, a reset, a tier or
// an override: see ratelimitctl) to this VM's deny caches. Every change
// bumps the epoch key (EpochKey); on each tick (1 s) while a deny cache
// of the plugin holds entries, the VM reads it, in one script call, and
// when it moved, clears every deny cache of the plugin. A change is
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

// cached reports whether a deny cache of the plugin holds entries, or a
// lease table keys.
func (p *Plugin) cached() bool {
	if p.denyCache.size() > 0 || p.leasing() {
		return true
	}
	for i := range p.routed {
		if q := p.routed[i].plugin; q.denyCache.size() > 0 || q.leasing() {
			return true
		}
	}
	return false
}

// pollEpoch reads the epoch, once per tick, when something is cached and
// no read is in flight (one overdue past the timeout is dropped).
func (p *Plugin) pollEpoch(now time.Time) {
	e := &p.epoch
	if e.inFlight {
		if now.Sub(e.sentAt) <= p.cfg.Redis.Timeout+time.Second {
			return
		}
		e.inFlight = false
	}
	if !p.cached() || now.Before(p.breaker.openUntil) || !p.link.usable(now) {
		return
	}
	e.buf = algorithms.AppendEpoch(e.buf[:0], p.tr.framing(), p.invoke(e.eval), e.key)
	id, err := p.tr.send(e.buf)
	if err != nil {
		p.errLog.log(LogWarn, "ratelimit: redis: epoch: dispatch: "+err.Error())
		return
	}
	e.id, e.inFlight, e.sentAt = id, true, now
	e.polls.Increment(1)
}

// isEpochReply reports whether id is the epoch read in flight.
func (p *Plugin) isEpochReply(id uint32) bool { return p.epoch.inFlight && p.epoch.id == id }

// onEpochReply reads the epoch, and clears the deny caches when it moved.
func (p *Plugin) onEpochReply(ok bool, reply []byte, ints []int64) {
	e := &p.epoch
	e.inFlight = false
	v, err := epochValue(&p.decoder, ok, reply, ints)
	if err != nil {
		var re *redisproto.Error
		if errors.As(err, &re) && re.Prefix() == "NOSCRIPT" {
			e.eval = true
		}
		p.errLog.log(LogWarn, "ratelimit: redis: epoch: "+err.Error())
		return
	}
	e.eval = false
	if e.known && v == e.seen {
		return
	}
	e.seen, e.known = v, true
	e.changes.Increment(1)
	p.denyCache.clear()
	p.endLeases()
	for i := range p.routed {
		p.routed[i].plugin.denyCache.clear()
		p.routed[i].plugin.endLeases()
	}
}

func epochValue(d *redisproto.Decoder, ok bool, reply []byte, ints []int64) (int64, error) {
	switch {
	case !ok:
		return 0, errors.New("redis call failed or timed out")
	case len(ints) == 1:
		return ints[0], nil
	case ints != nil:
		return 0, fmt.Errorf("unexpected reply %v", ints)
	}
	v, _, err := d.Decode(reply)
	if err != nil {
		return 0, err
	}
	if err := v.Err(); err != nil {
		return 0, err
	}
	return v.Int64()
}
