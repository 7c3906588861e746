package filter

import (
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/hotkey"
)

// leaseMetrics are ratelimit.lease.*: batch calls Redis admitted and the
// units they took, requests admitted from a batch with no Redis call,
// requests held while Redis denied a batch, units given back unspent,
// and keys found hot.
type leaseMetrics struct {
	grants, units, local, held, returned, hot Counter
}

func newLeaseMetrics(h PluginHost) leaseMetrics {
	return leaseMetrics{
		grants:   h.Counter("ratelimit.lease.grants"),
		units:    h.Counter("ratelimit.lease.units"),
		local:    h.Counter("ratelimit.lease.local"),
		held:     h.Counter("ratelimit.lease.held"),
		returned: h.Counter("ratelimit.lease.returned"),
		hot:      h.Counter("ratelimit.lease.hot_keys"),
	}
}

// addLease starts the lease entry of a key found hot, evicting the oldest
// when the table is full: its lease goes back to Redis.
func (p *policy) addLease(t *leaseTable, key string, tier int) *leaseEntry {
	if len(t.order) >= t.cfg.MaxKeys {
		old := t.order[0]
		t.order[0], t.order = nil, t.order[1:]
		p.dropLease(old)
	}
	e := &leaseEntry{t: t, key: key, tier: tier}
	t.entries[key] = e
	t.order = append(t.order, e)
	p.leaseMetrics.hot.Increment(1)
	return e
}

// dropLease forgets e, giving back its lease; a batch call still out
// gives its grant back when the reply comes.
func (p *policy) dropLease(e *leaseEntry) {
	p.endLease(e)
	e.gone = true
	delete(e.t.entries, e.key)
}

// sweepLeases, on each tick, ends the leases past max_hold, forgets the
// keys that went cold (no request in a whole tick, nothing out or held),
// and starts the next tick's counts.
func (p *policy) sweepLeases(now time.Time) {
	for _, t := range p.leases {
		if t == nil {
			continue
		}
		t.sketch = hotkey.Sketch{}
		kept := t.order[:0]
		for _, e := range t.order {
			e.rate, e.hits = min(e.hits, 1<<20), 0
			if e.granted > 0 && !now.Before(e.expires) {
				p.endLease(e)
			}
			if e.rate == 0 && e.granted == 0 && !e.pending && !now.Before(e.holdUntil) {
				e.gone = true
				delete(t.entries, e.key)
				continue
			}
			kept = append(kept, e)
		}
		clear(t.order[len(kept):])
		t.order = kept
	}
}

// endLeases gives back every lease and lifts every hold: an operator
// changed something (see pollEpoch).
func (p *policy) endLeases() {
	for _, t := range p.leases {
		if t == nil {
			continue
		}
		for _, e := range t.order {
			p.endLease(e)
			e.holdUntil, e.overloaded = time.Time{}, false
		}
	}
}

// leaseTable is rule ri's lease table, nil when the rule has no lease.
func (p *policy) leaseTable(ri int) *leaseTable {
	if p.leases == nil {
		return nil
	}
	return p.leases[ri]
}

// leasing reports whether a lease or hold may answer a request, so that
// an operator's change must reach it.
func (p *policy) leasing() bool {
	for _, t := range p.leases {
		if t != nil && len(t.order) > 0 {
			return true
		}
	}
	return false
}
