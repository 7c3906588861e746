package keyspace

import (
	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
)

// Debt is the read of how far past their limits a key's exhausted limits
// are. A response's cost is charged after the fact (a settle), so a limit
// may be in debt: Used beyond Limit, Remaining below 0, and every request
// denied until it clears. A Peek cannot tell: it reports Remaining 0.
//
// Debt takes two calls of the script's own code, each charging nothing:
// a settle of cost 0 answers what remains, negative in debt; a decide of
// cost 0 allows exactly when nothing is owed, and otherwise answers how
// long until Remaining is back to 0. Each is atomic on Redis's clock; the
// two, and the Peek before them, are not one moment, so traffic in between
// shows.
type Debt struct {
	limits  []int // the limits read, as indexes into KeyState.Limits
	settles []algorithms.Settle
	checks  []algorithms.Check
}

// NewDebt prepares the read of ks's limits that may owe: those with
// nothing remaining whose algorithm can carry a debt (sliding_log,
// sliding_counter, funnel; a concurrency limit's slots cannot be
// overdrawn). It returns nil when ks has none.
func NewDebt(ks *KeyState) *Debt {
	var d Debt
	for i := range ks.Limits {
		l := &ks.Limits[i]
		if !l.MayOwe() {
			continue
		}
		d.limits = append(d.limits, i)
		d.settles = append(d.settles, algorithms.Settle{Key: l.Key, Limit: l.Decided})
		d.checks = append(d.checks, algorithms.Check{Key: l.Key, Limit: l.Decided})
	}
	if len(d.limits) == 0 {
		return nil
	}
	return &d
}

// SettleArgs is the settle of cost 0, as arguments for a Redis client
// (with FCall, FCALL_RO of the library's peek: see readOnly).
func (d *Debt) SettleArgs(inv algorithms.Invoke) []any {
	return readOnly(clientArgs(algorithms.AppendSettle(nil, algorithms.RESP, inv, d.settles)))
}

// DecideArgs is the decide of cost 0, as arguments for a Redis client
// (with FCall, FCALL_RO of the library's peek).
func (d *Debt) DecideArgs(inv algorithms.Invoke) []any {
	return readOnly(clientArgs(algorithms.AppendCommand(nil, algorithms.RESP, inv, nil, d.checks)))
}

// Apply reads the two calls' replies, given as their integers, into ks:
// Remaining as the settle found it, Used = Limit - Remaining, and, when
// Remaining < 0, Clears as the decide found it.
func (d *Debt) Apply(ks *KeyState, settled, decided []int64) error {
	var s algorithms.Settlement
	if err := s.FromInts(settled, len(d.settles)); err != nil {
		return format.Errorf("settle of cost 0: %w", err)
	}
	var dec algorithms.Decision
	if err := dec.FromInts(decided, 0, len(d.checks)); err != nil {
		return format.Errorf("decide of cost 0: %w", err)
	}
	for j, i := range d.limits {
		l, rem := &ks.Limits[i], s.Results[j].Remaining
		if rem >= 0 {
			continue // nothing owed: the Peek's numbers stand
		}
		l.Remaining, l.Used, l.Clears = rem, l.Limit-rem, 0
		if r := dec.Results[j]; !r.Allowed {
			l.Clears = r.RetryAfter
		}
		l.Reset = max(l.Reset, l.Clears)
	}
	return nil
}

// MayOwe reports whether l may be in debt, which a Peek cannot tell:
// nothing remains, and its algorithm can carry a debt (not concurrency).
func (l *LimitState) MayOwe() bool {
	return l.Remaining == 0 && l.Decided.Algorithm != algorithms.Concurrency && l.Key != ""
}
