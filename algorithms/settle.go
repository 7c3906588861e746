package algorithms

import (
	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// Settle adjusts what an admitted request was charged once its real cost is known.
//
// With d = Cost - Reserved, a settle adjusts the admission's own record
// while it still counts; a charge beyond it, once the record no longer
// counts, is charged now; a refund of a record that no longer counts is
// nothing. Reserved 0 charges Cost now. A settle never denies: it may
// leave a debt (Settled.Remaining < 0), which denies later requests until
// it clears.
//
//   - Funnel: the TAT moves by d·T (from now when it is past), never below now.
//   - SlidingCounter: the count of At's window moves by d (never below 0)
//     while that window is the current or the previous one; otherwise a
//     charge goes to the current window.
//   - SlidingLog: an entry at At with weight Reserved, while in the window,
//     takes the weight Cost (none at 0); otherwise a charge is a new entry
//     at now of weight d.
//   - Concurrency: a release (see Release). The slot Reserved leaves,
//     unless it has expired (or Redis lost it); Cost is unused.
type Settle struct {
	Key      string
	Limit    Limit
	At       int64 // Redis time (µs) of the admission: its Decision.Now
	Reserved int64 // what the admission charged: 0 for check-only, or when no admission was recorded (a fail-open); a Concurrency limit's slot id
	Cost     int64 // the real cost, >= 0
}

// Release is the Settle that frees slot, which a request acquired under
// the Concurrency limit l at key (Check.Cost) and no longer holds. Its
// Settled is Applied -1 when the slot was held, 0 when it had expired
// already, and the slots then free as Remaining.
func Release(key string, l Limit, slot int64) Settle {
	return Settle{Key: key, Limit: l, Reserved: slot}
}

// Settled is what one Settle did.
type Settled struct {
	// Applied is the signed change actually made, in units: > 0 charged,
	// < 0 refunded, 0 nothing. A refund that empties a funnel counts the
	// whole units it freed; a counter's count stops at 0; a release is -1,
	// or 0 when its slot had expired.
	Applied int64
	// Remaining is what is left after it; negative = debt.
	Remaining int64
}

// Settlement is the outcome of one settle call.
type Settlement struct {
	// Now is the Redis server time the script used, in microseconds.
	Now int64
	// Results holds one Settled per Settle, in order.
	Results []Settled
}

// maxSettleScaled bounds one settle's cost times the limit's scale: a
// funnel's emission interval (µs), a counter's window (ms), 1 for a log.
const maxSettleScaled = 1 << 48

// CheckSettleCost reports whether a settle may cost n under this limit: n
// >= 0, and one settle moves what the script computes by at most 2^48: n·T
// <= 2^48µs (~8.9 years of debt) for a funnel, n·W(ms) <= 2^48 for a
// sliding counter, n <= 2^48 for a sliding log. From any state decisions
// leave, every value stays an exact integer in a Lua double for a debt of
// ten such settles piled up. A bad cost is a *ParamError for ParamCost.
func (l Limit) CheckSettleCost(n int64) error {
	if n < 0 {
		return &ParamError{Param: ParamCost, Want: "must be >= 0"}
	}
	scale := int64(1)
	switch l.Algorithm {
	case Funnel:
		scale = max(1, l.interval())
	case SlidingCounter:
		scale = max(1, l.Period.Milliseconds())
	}
	if n > maxSettleScaled/scale {
		return &ParamError{Param: ParamCost, Want: format.Sprintf("must be <= %d to settle", maxSettleScaled/scale)}
	}
	return nil
}

// AppendSettle appends to dst, framed as f, the command
//
//	FCALL <settle> <numkeys> <keys...> s <6 args per settle>
//
// (per settle: algorithm, a, b, At, Reserved, Cost) applying settles, or
// its EVALSHA or EVAL as inv says. It allocates nothing beyond growing
// dst.
func AppendSettle(dst []byte, f Framing, inv Invoke, settles []Settle) []byte {
	return appendSettle(dst, f, inv, OpSettle, settles)
}

// AppendPeekSettle is AppendSettle for settles that change nothing (each
// Reserved and Cost 0, none a release), reading what each limit has left,
// negative in debt. With FCall it calls the library's peek, flagged
// no-writes, which Redis runs on a replica and when full under maxmemory;
// EvalSHA and Eval call the script's settle (it has no read-only entry).
func AppendPeekSettle(dst []byte, f Framing, inv Invoke, settles []Settle) []byte {
	return appendSettle(dst, f, inv, OpPeek, settles)
}

func appendSettle(dst []byte, f Framing, inv Invoke, op Op, settles []Settle) []byte {
	w := argWriter{f: f, dst: dst}
	w.head(inv, op, 4+len(settles)*7, len(settles))
	for i := range settles {
		w.str(settles[i].Key)
	}
	w.str("s")
	for i := range settles {
		s := &settles[i]
		w.limit(&s.Limit)
		w.int(s.At)
		w.int(s.Reserved)
		w.int(s.Cost)
	}
	return w.dst
}

// FromInts fills s from the script's reply to a call of n settles, given
// as its integers in order: now, then per settle applied and remaining.
func (s *Settlement) FromInts(f []int64, n int) error {
	if len(f) < 1 || f[0] <= 0 || len(f) != 1+2*n {
		return format.Errorf("%w: settlement %s for %d settles", ErrUnexpectedReply, intsString(f), n)
	}
	s.Now, s.Results = f[0], s.Results[:0]
	for i := 1; i < len(f); i += 2 {
		s.Results = append(s.Results, Settled{Applied: f[i], Remaining: f[i+1]})
	}
	return nil
}

// ParseRESP fills s from the script's reply in RESP, when it is one flat
// array of integers, exactly b, read in place; ok is false for any other
// reply: decode it and call Parse.
func (s *Settlement) ParseRESP(b []byte, n int) (ok bool, err error) {
	var buf [smallReply]int64
	ints, ok := AppendFlatInts(buf[:0], b, smallReply)
	if !ok {
		return false, nil
	}
	return true, s.FromInts(ints, n)
}

// Parse fills s from the script's reply to a call of n settles, reusing
// s.Results. A Redis error reply is returned as its *redisproto.Error.
func (s *Settlement) Parse(v redisproto.Value, n int) error {
	var buf [smallReply]int64
	ints, err := replyInts(v, buf[:0])
	if err != nil {
		return err
	}
	return s.FromInts(ints, n)
}
