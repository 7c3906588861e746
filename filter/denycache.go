package filter

import "time"

// denyCache remembers, per rule key, until when Redis denied it and for
// what cost, so that a flood on one key is answered locally with no Redis
// call. It only ever denies, and only what Redis denied, until the moment
// Redis said the request could succeed (Retry-After), for a cost at least
// as high: it never allows what Redis would deny. One cache lives in each
// VM (each Envoy worker), bounded by max keys, evicting the oldest entry.
type denyCache struct {
	max     int
	entries map[string]denyEntry
	ring    []string // keys in insertion order, for eviction
	next    int
}

type denyEntry struct {
	until time.Time
	cost  int64
	v     verdict
	reply *denyReply
}

// denyReply is the 429 last rendered for an entry, with the whole seconds
// of Retry-After it shows: a flood on one key is answered with it, and
// rendered again only when that second changes, or the policy it shows,
// or the call of a JSON-RPC batch it names.
// policy is the RateLimit-Policy of the fresh denial that stored the
// entry, listing every enforced rule that request matched, and rules
// those rules, set once (Stream.stampDenials): a cached denial repeats it
// to a request that shares them ("" until set, or for another request:
// the entry's rule's own; see Stream.cachedPolicy). shown is the policy
// rendered last, and call the JSON-RPC call (verdict.call) its body names.
type denyReply struct {
	secs    int64
	call    int
	status  int
	headers [][2]string
	body    []byte
	policy  string
	rules   []stampedRule
	shown   string
}

func newDenyCache(max int) *denyCache {
	if max <= 0 {
		return nil
	}
	// The map grows with use: sized for max at once, it would take about
	// 2 MiB per configuration (each _rules_ entry has one) in every VM.
	return &denyCache{max: max, entries: map[string]denyEntry{}}
}

// lookup returns the cached denial of key for a request of cost in tier
// (tierAny when Redis picks it), and its last rendered reply; clock gives
// the time, read only when key is cached (in wasm a read is a host call).
// A denial holds for the tier it was made in, or for any when it was a
// block or an override's.
func (d *denyCache) lookup(key []byte, cost int64, tier int, clock func() time.Time) (verdict, *denyReply, bool) {
	if d == nil || len(d.entries) == 0 {
		return verdict{}, nil, false
	}
	e, ok := d.entries[string(key)]
	if !ok || cost < e.cost || tier != tierAny && e.v.tier != tier && !e.v.blocked && e.v.tier != tierOverride {
		return verdict{}, nil, false
	}
	now := clock()
	if !now.Before(e.until) {
		return verdict{}, nil, false
	}
	v := e.v
	left := e.until.Sub(now)
	if v.blocked {
		v.blockedFor = left
	} else {
		v.result.RetryAfter = left
	}
	return v, e.reply, true
}

// store records that Redis denied key for cost until until, and returns
// the entry's reply (nil without a cache).
func (d *denyCache) store(key string, cost int64, until time.Time, v verdict) *denyReply {
	if d == nil {
		return nil
	}
	if _, ok := d.entries[key]; !ok {
		if len(d.ring) < d.max {
			d.ring = append(d.ring, key)
		} else {
			delete(d.entries, d.ring[d.next])
			d.ring[d.next] = key
			d.next = (d.next + 1) % d.max
		}
	}
	r := &denyReply{secs: -1}
	d.entries[key] = denyEntry{until: until, cost: cost, v: v, reply: r}
	return r
}

// clear forgets every entry: an operator changed something (see
// Plugin.pollEpoch).
func (d *denyCache) clear() {
	if d == nil {
		return
	}
	clear(d.entries)
	d.ring, d.next = d.ring[:0], 0
}

// sweep forgets the entries that ended before now, keeping the others
// oldest first: the epoch is read only while something is cached.
func (d *denyCache) sweep(now time.Time) {
	if d == nil || len(d.entries) == 0 {
		return
	}
	n := len(d.ring)
	kept := make([]string, 0, len(d.entries))
	for i := range n {
		key := d.ring[(d.next+i)%n]
		if e, ok := d.entries[key]; ok && now.Before(e.until) {
			kept = append(kept, key)
		} else {
			delete(d.entries, key)
		}
	}
	d.ring, d.next = kept, 0
}

// size is the number of entries.
func (d *denyCache) size() int {
	if d == nil {
		return 0
	}
	return len(d.entries)
}
