package filter

import "time"

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

// hotSketch counts each key's requests in the current tick, in fixed
// memory: two rows of counters, each key counted in one counter per row
// by a hash; its count is the smaller of the two, never below the truth.
// A cold key that shares both counters with busy keys may pass for hot:
// it then takes batches it does not spend, which go back after max_hold.
type hotSketch struct {
	rows [2][hotColumns]uint16
}

const hotColumns = 1024

// add counts one request of key and returns the key's count this tick.
func (h *hotSketch) add(key []byte) int64 {
	x := uint64(14695981039346656037) // FNV-1a
	for _, b := range key {
		x = (x ^ uint64(b)) * 1099511628211
	}
	a, b := &h.rows[0][x%hotColumns], &h.rows[1][(x>>32)%hotColumns]
	if *a < 1<<16-1 {
		*a++
	}
	if *b < 1<<16-1 {
		*b++
	}
	return int64(min(*a, *b))
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
		t.sketch = hotSketch{}
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
