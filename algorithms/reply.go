package algorithms

import (
	"errors"
	"strconv"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// Result is one limit's verdict, as redis_rate and CL.THROTTLE report it.
type Result struct {
	// Allowed is this limit's own verdict. A request is admitted only when
	// every limit allows it.
	Allowed bool
	// Limit is the limit's capacity: Rate for sliding windows, Burst for Funnel.
	Limit int64
	// Remaining is what a request could still cost now: after this
	// request when it was admitted, before it otherwise.
	Remaining int64
	// RetryAfter is how long until this limit would admit the request;
	// -1 when it allowed it.
	RetryAfter time.Duration
	// ResetAfter is how long until the limit is back to full capacity, if no
	// more requests arrive. A PerSecond(10) funnel after one request: 100ms.
	ResetAfter time.Duration
}

// Decision is the outcome of one script call.
type Decision struct {
	// Now is the Redis server time the script used, in microseconds since
	// the Unix epoch.
	Now int64
	// Blocked is set when an operator's block key exists; then Results is
	// empty, BlockedBy is the index of that key in the call's blocks, and
	// BlockedFor is its remaining TTL (-1 when it has none).
	Blocked    bool
	BlockedBy  int
	BlockedFor time.Duration
	// Results holds one Result per Check, in order, then, for a call with
	// choices, one per position of each choice (see FromIntsCall).
	Results []Result
	// Picks and Picked say what each choice picked; see FromIntsCall.
	Picks  []int
	Picked []Limit
	// Granted is, per choice, the units its lease took; see Choice.Lease.
	Granted []int64
	// Delay is how long the call's throttles hold an admitted request; see
	// Choice.Throttle.
	Delay time.Duration
}

// Allowed reports whether the request is admitted: not blocked, and allowed
// by every limit.
func (d *Decision) Allowed() bool {
	if d.Blocked {
		return false
	}
	for i := range d.Results {
		if !d.Results[i].Allowed {
			return false
		}
	}
	return true
}

// Tightest returns the index of the result that names the request's fate:
// the denying limit with the longest RetryAfter, or, when all allow, the one
// with the fewest Remaining relative to its Limit. -1 when there are none.
func (d *Decision) Tightest() int {
	best := -1
	for i := range d.Results {
		if d.Results[i].Unused() {
			continue
		}
		if best < 0 || tighter(&d.Results[i], &d.Results[best]) {
			best = i
		}
	}
	return best
}

// Tighter reports whether r names a request's fate rather than than: a
// denial over an allowance, the longer wait among denials, the smaller
// share left among allowances.
func Tighter(r, than Result) bool { return tighter(&r, &than) }

func tighter(r, than *Result) bool {
	if r.Allowed != than.Allowed {
		return !r.Allowed
	}
	if !r.Allowed {
		return r.RetryAfter > than.RetryAfter
	}
	// r.Remaining/r.Limit < than.Remaining/than.Limit, without division.
	return r.Remaining*than.Limit < than.Remaining*r.Limit
}

// ErrUnexpectedReply wraps every reply that is not what the script returns.
var ErrUnexpectedReply = errors.New("algorithms: unexpected script reply")

// Parse fills d from the script's reply to a call with nb block keys and n
// checks, reusing d.Results. A Redis error reply is returned as its
// *redisproto.Error, so callers can tell -NOSCRIPT apart.
func (d *Decision) Parse(v redisproto.Value, nb, n int) error {
	return d.ParseCall(v, nb, n, nil)
}

// ParseCall is Parse for a call with choices; see FromIntsCall.
func (d *Decision) ParseCall(v redisproto.Value, nb, n int, choices []Choice) error {
	var buf [smallReply]int64
	ints, err := replyInts(v, buf[:0])
	if err != nil {
		return err
	}
	if len(ints) < 2 {
		return format.Errorf("%w: %s", ErrUnexpectedReply, v.String())
	}
	return d.FromIntsCall(ints, nb, n, choices)
}

// smallReply is the longest reply parsed without allocating: 2 + 5 per
// limit, for up to 16 limits (1 + 2 per settle, for up to 40 settles).
const smallReply = 2 + 5*16

// replyInts returns the integers of an array reply, in buf when they fit;
// a Redis error reply is returned as its *redisproto.Error.
func replyInts(v redisproto.Value, buf []int64) ([]int64, error) {
	if err := v.Err(); err != nil {
		return nil, err
	}
	elems, err := v.Array()
	if err != nil || len(elems) < 1 {
		return nil, format.Errorf("%w: %s", ErrUnexpectedReply, v.String())
	}
	ints := buf[:0]
	if len(elems) > cap(buf) {
		ints = make([]int64, 0, len(elems))
	}
	ints = ints[:len(elems)]
	for i, e := range elems {
		if ints[i], err = Integer(e); err != nil {
			return nil, format.Errorf("%w: element %d of %s: %v", ErrUnexpectedReply, i, v.String(), err)
		}
	}
	return ints, nil
}

// FromInts fills d from the script's reply given as its integers, in
// order, to a call with nb block keys and n checks.
func (d *Decision) FromInts(f []int64, nb, n int) error {
	if len(f) < 2 || f[0] <= 0 || f[1] < -2 {
		return format.Errorf("%w: header %s", ErrUnexpectedReply, intsString(f))
	}
	now, block := f[0], f[1]
	d.Now, d.Results = now, d.Results[:0]
	d.Blocked, d.BlockedBy, d.BlockedFor = block != -2, 0, 0
	if d.Blocked {
		if len(f) != 3 || f[2] < 1 || f[2] > int64(nb) {
			return format.Errorf("%w: blocked reply %s", ErrUnexpectedReply, intsString(f))
		}
		d.BlockedBy = int(f[2] - 1)
		d.BlockedFor = time.Duration(block) * time.Millisecond
		if block == -1 {
			d.BlockedFor = -1
		}
		return nil
	}
	if len(f) != 2+5*n {
		return format.Errorf("%w: %d elements for %d limits", ErrUnexpectedReply, len(f), n)
	}
	for i := 0; i < n; i++ {
		r, err := parseResult(f[2+5*i : 7+5*i])
		if err != nil {
			return format.Errorf("%w: limit %d: %v", ErrUnexpectedReply, i, err)
		}
		d.Results = append(d.Results, r)
	}
	return nil
}

// intsString formats f without letting it escape, so that callers can
// keep it on the stack.
func intsString(f []int64) string {
	b := []byte{'['}
	for i, x := range f {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(b, x, 10)
	}
	return string(append(b, ']'))
}

func parseResult(f []int64) (Result, error) {
	allowed, limit, remaining, retry, reset := f[0], f[1], f[2], f[3], f[4]
	switch {
	case allowed != 0 && allowed != 1:
		return Result{}, format.Errorf("allowed = %d", allowed)
	case limit < 1 || remaining < 0 || remaining > limit || reset < 0:
		return Result{}, format.Errorf("limit %d, remaining %d, reset %d", limit, remaining, reset)
	case allowed == 1 && retry != -1, allowed == 0 && retry < 0:
		return Result{}, format.Errorf("allowed %d with retry_after %d", allowed, retry)
	}
	r := Result{Allowed: allowed == 1, Limit: limit, Remaining: remaining,
		RetryAfter: -1, ResetAfter: time.Duration(reset) * time.Microsecond}
	if !r.Allowed {
		r.RetryAfter = time.Duration(retry) * time.Microsecond
	}
	return r, nil
}

// Integer reads an integer reply, or a bulk string holding an integer in
// canonical form, as a gateway in between may send it.
func Integer(v redisproto.Value) (int64, error) {
	if v.Kind != redisproto.KindBulkString {
		return v.Int64()
	}
	n, err := strconv.ParseInt(string(v.Str), 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != string(v.Str) {
		return 0, format.Errorf("bulk string %q is not an integer", v.Str)
	}
	return n, nil
}
