// Package localstate holds the limit states a VM decides from under
// failure_mode: local: the script's algorithms, through algorithms.Model,
// on the VM's clock. Its state is bounded: at most max_keys limit states
// (a rank heap, table.go), and a state is forgotten once the limit is back
// to full (its ResetAfter has passed), so it no longer affects a decision.
// A state that still denies is never pushed out by a new key, so a flood
// of other keys cannot re-admit a denied client.
package localstate

import (
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// Counter is a counter metric.
type Counter interface{ Increment(delta uint64) }

// Gauge is a gauge metric.
type Gauge interface{ Add(delta int64) }

// States is a VM's local limit states: the model's, held in a bounded
// table. Times are µs since the epoch.
type States struct {
	model *algorithms.Model
	table *localTable

	// evicted counts the states pushed out while they still mattered,
	// unheld the new keys not held (every state denied), and states is
	// the number held.
	evicted, unheld Counter
	states          Gauge

	// Scratch, reused.
	idles []int64 // per settle, until when its state matters
	peek  [1]algorithms.Check
}

// New holds at most maxKeys states of model.
func New(model *algorithms.Model, maxKeys int, evicted, unheld Counter, states Gauge) *States {
	return &States{model: model, table: newLocalTable(maxKeys), evicted: evicted, unheld: unheld, states: states}
}

// Len is the number of limit states held.
func (l *States) Len() int { return l.table.len() }

// Decide decides checks at now from the local state, and keeps each
// check's state.
func (l *States) Decide(now int64, checks []algorithms.Check) algorithms.Decision {
	d := l.model.Decide(now, nil, checks)
	l.table.pin()
	for i, chk := range checks {
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

// Settle applies settles at now to the local state, and keeps the state
// of each that charged more than it reserved.
func (l *States) Settle(now int64, settles []algorithms.Settle) algorithms.Settlement {
	l.idles = l.idles[:0]
	for i := range settles {
		st := &settles[i]
		l.idles = append(l.idles, l.settledIdle(st.Key, st.Limit, st.Cost-st.Reserved, now))
	}
	res := l.model.Settle(now, settles)
	l.table.pin()
	for i := range settles {
		if st := &settles[i]; st.Cost > st.Reserved {
			unit := algorithms.Check{Key: st.Key, Limit: st.Limit, Cost: 1}
			l.keep(st.Key, l.rankAfter(unit, res.Results[i].Remaining, -1, now), l.idles[i], now)
		}
	}
	return res
}

// rankAfter ranks chk's state once a decision at now left remaining: by
// its use while it admits chk again, else by when it does, retry from now
// when chk was denied (otherwise retry < 0, and a peek finds it).
func (l *States) rankAfter(chk algorithms.Check, remaining int64, retry time.Duration, now int64) int64 {
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
func (l *States) keep(key string, rank, idle, now int64) {
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

// Sweep forgets the states that no longer matter at now.
func (l *States) Sweep(now int64) {
	for i := l.table.len() - 1; i >= 0; i-- { // remove moves the last entry, already seen, to i
		if st := l.table.entries[i]; st.idle <= now {
			l.model.Forget(st.key)
			l.table.remove(i)
			l.states.Add(-1)
		}
	}
}

// settledIdle bounds until when key's state matters once d more units are
// charged at now: a funnel empties d emission intervals later; a sliding
// log's new entry lasts a window, a counter's count two.
func (l *States) settledIdle(key string, lim algorithms.Limit, d, now int64) int64 {
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
