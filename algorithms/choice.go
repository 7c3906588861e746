package algorithms

import (
	"strconv"
	"strings"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
)

// Choice is a rule key whose limits Redis picks in the call that decides
// them: an operator's override when OverrideKey is set and holds one (see
// EncodeOverride), else the tier TierKey names when it is set and names
// one of Tiers, else Tiers[0], the default. The picked limits decide in
// order on Keys, the state keys of the rule key's positions: every tier
// shares position i's state, so a key keeps what it used when its tier
// changes.
type Choice struct {
	TierKey, OverrideKey string
	Keys                 []string
	// Cost and CheckOnly apply to every picked limit, as in Check.
	Cost      int64
	CheckOnly bool
	// Slot, when > 0, is what a picked Concurrency limit takes instead:
	// the slot id it acquires, whatever Cost and CheckOnly (see Check.Cost).
	Slot int64
	// Lease, when set, asks for more than Cost when the whole call is
	// admitted: the most units up to Lease (>= Cost >= 1) that every
	// picked limit still admits, all taken as one admission of that cost
	// (Decision.Granted). The limits decide at Cost as ever: Cost is the
	// least the lease takes. Not with CheckOnly; a picked Concurrency
	// limit takes its slot and the lease then takes Cost alone.
	Lease int64
	// Throttle, when > 0, is the longest a request its funnels deny now
	// may wait instead: when it conforms to all of them within Throttle,
	// it is admitted and charged as of that time, and Decision.Delay says
	// how long to hold it. The call's throttles share one time, the latest.
	// Not with CheckOnly, Lease or a Cost below 1. The call's other limits
	// decide now; its other funnels are charged as of that time too.
	Throttle time.Duration
	Tiers    []Tier
}

// Tier is a named set of limits: at most len(Choice.Keys), and at least one.
type Tier struct {
	Name   string
	Limits []Limit
}

// AppendCall is AppendCommand for a call with choices besides its checks.
// Without choices it writes exactly what AppendCommand writes. The reply
// holds the checks' results, then each choice's positions': see
// Decision.FromIntsCall. op is OpDecide, or OpPeek when every check and
// choice is CheckOnly (the peek function refuses a call that charges).
func AppendCall(dst []byte, f Framing, inv Invoke, op Op, blocks []string, checks []Check, choices []Choice) []byte {
	if len(choices) == 0 {
		return appendPlain(dst, f, inv, op, blocks, checks)
	}
	keys, args := len(blocks)+len(checks), 3+4*len(checks)
	for i := range choices {
		c := &choices[i]
		keys += len(c.Keys)
		if c.TierKey != "" {
			keys++
		}
		if c.OverrideKey != "" {
			keys++
		}
		args += 5
		if c.Slot > 0 {
			args++
		}
		if c.Lease > 0 {
			args++
		}
		if c.Throttle > 0 {
			args++
		}
		for _, t := range c.Tiers {
			args += 2 + 3*len(t.Limits)
		}
	}
	w := argWriter{f: f, dst: dst}
	w.head(inv, op, 3+keys+args, keys)
	for _, b := range blocks {
		w.str(b)
	}
	for i := range checks {
		w.str(checks[i].Key)
	}
	for i := range choices {
		c := &choices[i]
		if c.TierKey != "" {
			w.str(c.TierKey)
		}
		if c.OverrideKey != "" {
			w.str(c.OverrideKey)
		}
		for _, k := range c.Keys {
			w.str(k)
		}
	}
	w.str("g")
	w.int(int64(len(blocks)))
	w.int(int64(len(checks)))
	for i := range checks {
		w.check(&checks[i])
	}
	for i := range choices {
		c := &choices[i]
		flags := int64(0)
		if c.TierKey != "" {
			flags |= 1
		}
		if c.OverrideKey != "" {
			flags |= 2
		}
		if c.Slot > 0 {
			flags |= 4
		}
		if c.Lease > 0 {
			flags |= 8
		}
		if c.Throttle > 0 {
			flags |= 16
		}
		w.str("x")
		w.int(flags)
		w.int(int64(len(c.Keys)))
		w.int(c.wireCost())
		w.int(int64(len(c.Tiers)))
		if c.Slot > 0 {
			w.int(c.Slot)
		}
		if c.Lease > 0 {
			w.int(c.Lease)
		}
		if c.Throttle > 0 {
			w.int(c.Throttle.Microseconds())
		}
		for _, t := range c.Tiers {
			w.str(t.Name)
			w.int(int64(len(t.Limits)))
			for i := range t.Limits {
				w.limit(&t.Limits[i])
			}
		}
	}
	return w.dst
}

func (c *Choice) wireCost() int64 {
	if c.CheckOnly {
		return -1
	}
	return c.Cost
}

// check writes a check's four arguments: algorithm, a, b, cost.
func (w *argWriter) check(c *Check) {
	w.limit(&c.Limit)
	if c.CheckOnly {
		w.int(-1)
	} else {
		w.int(c.Cost)
	}
}

// PickOverride is Decision.Picks' value for a choice decided by its
// override.
const PickOverride = -1

// FromIntsCall fills d from the reply, given as its integers, to a call
// with nb block keys, n checks and choices. After the checks' results,
// Results holds one per position of each choice; d.Picks the tier each
// choice picked (an index into its Tiers, or PickOverride); d.Picked the
// limit each position decided, the zero Limit for a position the picked
// limits leave unused, whose Result is Unused; d.Granted what each
// choice's lease took (0 for a choice without one, or when denied);
// d.Delay how long its throttles hold the request.
func (d *Decision) FromIntsCall(f []int64, nb, n int, choices []Choice) error {
	d.Delay = 0
	if len(choices) == 0 {
		d.Picks, d.Picked, d.Granted = d.Picks[:0], d.Picked[:0], d.Granted[:0]
		return d.FromInts(f, nb, n)
	}
	want, longest := 2+5*n, time.Duration(0)
	for i := range choices {
		longest = max(longest, choices[i].Throttle)
		want += 1 + 7*len(choices[i].Keys)
		if choices[i].Lease > 0 {
			want++
		}
		if choices[i].Throttle > 0 {
			want++
		}
	}
	d.Picks, d.Picked, d.Granted = d.Picks[:0], d.Picked[:0], d.Granted[:0]
	if len(f) < 2 || f[1] != -2 { // a block, {now, pttl, i}, or a bad header
		return d.FromInts(f, nb, n)
	}
	if len(f) != want {
		return format.Errorf("%w: %d elements for %d limits and %d choices", ErrUnexpectedReply, len(f), n, len(choices))
	}
	if err := d.FromInts(f[:2+5*n], nb, n); err != nil {
		return err
	}
	at := 2 + 5*n
	for ci := range choices {
		c := &choices[ci]
		pick := int(f[at]) - 1
		if pick < PickOverride || pick >= len(c.Tiers) || pick == PickOverride && c.OverrideKey == "" {
			return format.Errorf("%w: choice %d picked %d", ErrUnexpectedReply, ci, f[at])
		}
		d.Picks = append(d.Picks, pick)
		at++
		granted := int64(0)
		if c.Lease > 0 {
			if granted = f[at]; granted != 0 && (granted < c.Cost || granted > c.Lease) {
				return format.Errorf("%w: choice %d's lease took %d", ErrUnexpectedReply, ci, granted)
			}
			at++
		}
		d.Granted = append(d.Granted, granted)
		if c.Throttle > 0 {
			delay := time.Duration(f[at]) * time.Microsecond
			if delay < 0 || delay > longest {
				return format.Errorf("%w: choice %d's throttle delays %v", ErrUnexpectedReply, ci, delay)
			}
			d.Delay = max(d.Delay, delay)
			at++
		}
		for p := range c.Keys {
			v := f[at : at+7]
			at += 7
			if v[1] == 0 {
				d.Results = append(d.Results, Result{Allowed: true, RetryAfter: -1})
				d.Picked = append(d.Picked, Limit{})
				continue
			}
			r, err := parseResult(v[:5])
			if err != nil {
				return format.Errorf("%w: choice %d position %d: %v", ErrUnexpectedReply, ci, p, err)
			}
			var l Limit
			if pick >= 0 && p < len(c.Tiers[pick].Limits) {
				l = c.Tiers[pick].Limits[p]
			} else if v[5] == 5 {
				var ok bool
				if l, ok = withPeriodOf(Limit{Algorithm: CalendarWindow, Rate: v[1]}, c.Tiers[0].Limits, p); !ok {
					return format.Errorf("%w: choice %d position %d: a calendar override without a calendar tier", ErrUnexpectedReply, ci, p)
				}
			} else if l, err = limitFromArgs(v[5], v[1], v[6]); err != nil {
				return format.Errorf("%w: choice %d position %d: %v", ErrUnexpectedReply, ci, p, err)
			}
			d.Results = append(d.Results, r)
			d.Picked = append(d.Picked, l)
		}
	}
	return nil
}

// Unused reports a choice position the picked limits left unused.
func (r *Result) Unused() bool { return r.Limit == 0 }

// withPeriodOf is a calendar override's limit l as it decides: with the
// period of the default tier's limit at its position p, which must be a
// calendar limit (else false, and Redis ignores the override).
func withPeriodOf(l Limit, defaults []Limit, p int) (Limit, bool) {
	if p >= len(defaults) || defaults[p].Algorithm != CalendarWindow {
		return l, false
	}
	d := defaults[p]
	d.Rate, d.Burst = l.Rate, l.Rate
	return d, true
}

// limitFromArgs rebuilds a limit from the script's algorithm number (1 l,
// 2 c, 3 f, 4 k, 5 p) and its a and b. A funnel's rate and period come
// back as 1 per its emission interval, which decides and advertises
// alike. A calendar limit's b is its unit, as an override holds it; it
// comes back without its zone (see withPeriodOf), unvalidated.
func limitFromArgs(code, a, b int64) (Limit, error) {
	var l Limit
	switch code {
	case 5:
		u := CalendarUnit(b)
		if a < 1 || b < int64(Hour) || b > int64(Month) {
			return l, format.Errorf("calendar limit %d per unit %d", a, b)
		}
		return Limit{Algorithm: CalendarWindow, Rate: a, Burst: a, Period: u.nominal(), Calendar: Calendar{Unit: u}}, nil
	case 1:
		l = Limit{Algorithm: SlidingLog, Rate: a, Burst: a, Period: time.Duration(b) * time.Microsecond}
	case 2:
		l = Limit{Algorithm: SlidingCounter, Rate: a, Burst: a, Period: time.Duration(b) * time.Millisecond}
	case 3:
		l = Limit{Algorithm: Funnel, Rate: 1, Burst: a, Period: time.Duration(b) * time.Microsecond}
	case 4:
		l = Limit{Algorithm: Concurrency, Rate: a, Burst: a, Period: time.Duration(b) * time.Microsecond}
	default:
		return l, format.Errorf("algorithm %d", code)
	}
	return l, l.Validate()
}

// EncodeOverride is the value of an override key: "algorithm:a:b" per
// limit, comma-separated, as the script reads it.
func EncodeOverride(limits []Limit) (string, error) {
	if len(limits) == 0 {
		return "", format.Errorf("an override needs at least one limit")
	}
	var b strings.Builder
	for i, l := range limits {
		if err := l.Validate(); err != nil {
			return "", format.Errorf("limit %d: %w", i, err)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		x, y := l.args()
		if l.Algorithm == CalendarWindow {
			y = int64(l.Calendar.Unit) // its period is the default tier's: withPeriodOf
		}
		b.WriteString(l.Algorithm.code() + ":" + strconv.FormatInt(x, 10) + ":" + strconv.FormatInt(y, 10))
	}
	return b.String(), nil
}

// DecodeOverride reads an override key's value back into limits, as the
// script decides them (funnels and calendar limits as in limitFromArgs).
func DecodeOverride(s string) ([]Limit, error) {
	var out []Limit
	for i, item := range strings.Split(s, ",") {
		f := strings.Split(item, ":")
		if len(f) != 3 {
			return nil, format.Errorf("override limit %d: %q is not algorithm:a:b", i, item)
		}
		code := int64(strings.Index("lcfkp", f[0]) + 1)
		a, errA := strconv.ParseInt(f[1], 10, 64)
		b, errB := strconv.ParseInt(f[2], 10, 64)
		if len(f[0]) != 1 || code == 0 || errA != nil || errB != nil {
			return nil, format.Errorf("override limit %d: %q is not algorithm:a:b", i, item)
		}
		l, err := limitFromArgs(code, a, b)
		if err != nil {
			return nil, format.Errorf("override limit %d: %w", i, err)
		}
		out = append(out, l)
	}
	return out, nil
}
