package algorithms

import (
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
)

// Algorithm names one of the rate-limit algorithms.
type Algorithm uint8

const (
	// SlidingLog admits at most Rate requests in any window of length Period.
	SlidingLog Algorithm = iota + 1
	// SlidingCounter approximates SlidingLog in O(1) memory.
	SlidingCounter
	// Funnel is GCRA: Burst requests at once, refilled at Rate per Period.
	Funnel
	// Concurrency admits at most Rate requests in flight; a slot not
	// released within Period expires.
	Concurrency
	// CalendarWindow admits at most Rate per calendar period (Calendar):
	// a fixed window that is an hour, day, week or month of local time.
	CalendarWindow
)

// code is the algorithm's name inside the script's arguments.
func (a Algorithm) code() string {
	switch a {
	case SlidingLog:
		return "l"
	case SlidingCounter:
		return "c"
	case Funnel:
		return "f"
	case Concurrency:
		return "k"
	case CalendarWindow:
		return "p"
	}
	return "?"
}

func (a Algorithm) String() string {
	switch a {
	case SlidingLog:
		return "sliding_log"
	case SlidingCounter:
		return "sliding_counter"
	case Funnel:
		return "funnel"
	case Concurrency:
		return "concurrency"
	case CalendarWindow:
		return "calendar"
	}
	return format.Sprintf("Algorithm(%d)", uint8(a))
}

// ParseAlgorithm is the inverse of Algorithm.String.
func ParseAlgorithm(s string) (Algorithm, error) {
	for _, a := range []Algorithm{SlidingLog, SlidingCounter, Funnel, Concurrency, CalendarWindow} {
		if a.String() == s {
			return a, nil
		}
	}
	return 0, format.Errorf("unknown algorithm %q (want sliding_log, sliding_counter, funnel, concurrency or calendar)", s)
}

// Limits on parameters keep every value the script computes an exact integer
// in a Lua double (below 2^52).
const (
	maxScaled   = 1 << 50 // SlidingCounter: Rate * Period in ms
	maxTau      = 1 << 48 // Funnel: Burst * emission interval in us (~8.9 years)
	maxLogLimit = 1 << 20 // SlidingLog: units per window; Concurrency: slots
	// maxSlotDuration bounds a Concurrency limit's Period, the longest a
	// slot is held when its release never comes.
	maxSlotDuration = 24 * time.Hour
)

// Limit is one rate limit. Build it with NewSlidingLog, NewSlidingCounter,
// NewFunnel, TokenBucket, NewConcurrency or NewCalendar, which reject bad
// parameters.
type Limit struct {
	Algorithm Algorithm
	// Rate is the number of requests per Period: the window's quota for the
	// sliding algorithms, the leak rate for Funnel; for Concurrency, the
	// requests in flight at once.
	Rate int64
	// Period is the window length (sliding) or the leak period (Funnel);
	// for Concurrency, the most a slot is held (max_duration).
	Period time.Duration
	// Burst is the most a request may cost: Rate for the sliding
	// algorithms and Concurrency, the bucket capacity for Funnel. Funnel{Burst: 10, Rate: 10,
	// Period: time.Second} admits 10 at once, then one every 100 ms.
	Burst int64
	// Calendar is a CalendarWindow limit's period; zero for the others,
	// whose Period it replaces (Period is then its nominal length).
	Calendar Calendar
}

// NewSlidingLog admits at most limit requests in any window of length window.
// Memory is about 20 bytes per admission within the window, whatever its cost.
func NewSlidingLog(limit int64, window time.Duration) (Limit, error) {
	l := Limit{Algorithm: SlidingLog, Rate: limit, Period: window, Burst: limit}
	return l, l.Validate()
}

// NewSlidingCounter approximates NewSlidingLog with two weighted fixed
// windows; the window is counted in whole milliseconds.
func NewSlidingCounter(limit int64, window time.Duration) (Limit, error) {
	l := Limit{Algorithm: SlidingCounter, Rate: limit, Period: window, Burst: limit}
	return l, l.Validate()
}

// NewFunnel is redis-cell's CL.THROTTLE key capacity-1 rate period: a
// leaky bucket holding capacity requests, leaking rate per period. The
// emission interval period/rate is rounded to the microsecond.
func NewFunnel(capacity, rate int64, period time.Duration) (Limit, error) {
	l := Limit{Algorithm: Funnel, Rate: rate, Period: period, Burst: capacity}
	return l, l.Validate()
}

// TokenBucket maps a token bucket onto Funnel. A bucket of capacity tokens,
// refilled with refill tokens every period and full at the start, admits
// exactly what a funnel of the same capacity leaking refill per period
// admits: a request costing n takes n tokens in one, and adds n units of
// water in the other, and tokens left equal capacity minus water held.
func TokenBucket(capacity, refill int64, period time.Duration) (Limit, error) {
	return NewFunnel(capacity, refill, period)
}

// NewConcurrency admits at most limit requests in flight at once. Each
// admitted request holds a slot until it is released (see Release), or
// for at most maxDuration, after which the slot expires: a release that
// never comes (a proxy that died) frees it then. Memory is about 20 bytes
// per slot held.
func NewConcurrency(limit int64, maxDuration time.Duration) (Limit, error) {
	l := Limit{Algorithm: Concurrency, Rate: limit, Period: maxDuration, Burst: limit}
	return l, l.Validate()
}

// Validate reports the first bad parameter as a *ParamError.
func (l Limit) Validate() error {
	switch l.Algorithm {
	case SlidingLog, SlidingCounter, Funnel, Concurrency, CalendarWindow:
	default:
		return &ParamError{Param: ParamAlgorithm, Want: "unknown"}
	}
	if l.Rate < 1 {
		return &ParamError{Param: ParamRate, Want: "must be >= 1"}
	}
	if l.Burst < 1 {
		return &ParamError{Param: ParamBurst, Want: "must be >= 1"}
	}
	if l.Period <= 0 {
		return &ParamError{Param: ParamPeriod, Want: "must be > 0"}
	}
	switch l.Algorithm {
	case SlidingLog:
		if l.Period < time.Microsecond {
			return &ParamError{Param: ParamPeriod, Want: "must be >= 1us"}
		}
		if l.Rate > maxLogLimit {
			return &ParamError{Param: ParamRate, Want: format.Sprintf("must be <= %d for sliding_log (use sliding_counter)", maxLogLimit)}
		}
	case SlidingCounter:
		if l.Period < time.Millisecond || l.Period%time.Millisecond != 0 {
			return &ParamError{Param: ParamPeriod, Want: "must be a whole number of milliseconds"}
		}
		if l.Rate > maxScaled/l.Period.Milliseconds() {
			return &ParamError{Param: ParamRate, Expr: "%s * period(ms)", Want: "must be <= 2^50"}
		}
	case Funnel:
		t := l.interval()
		if t < 1 {
			return &ParamError{Param: ParamRate, Expr: "period / %s", Want: "must be >= 1us"}
		}
		if l.Burst > maxTau/t {
			return &ParamError{Param: ParamBurst, Expr: "%s * period / rate", Want: "must be <= 2^48us"}
		}
	case CalendarWindow:
		if err := l.Calendar.validate(); err != nil {
			return err
		}
		if l.Period != l.Calendar.Unit.nominal() {
			return &ParamError{Param: ParamPeriod, Want: "must be the unit's nominal length"}
		}
		if l.Rate > maxScaled {
			return &ParamError{Param: ParamRate, Want: "must be <= 2^50"}
		}
	case Concurrency:
		if l.Period < time.Millisecond || l.Period > maxSlotDuration {
			return &ParamError{Param: ParamPeriod, Want: "must be >= 1ms and <= 24h"}
		}
		if l.Rate > maxLogLimit {
			return &ParamError{Param: ParamRate, Want: format.Sprintf("must be <= %d", maxLogLimit)}
		}
	}
	if l.Algorithm != CalendarWindow && l.Calendar != (Calendar{}) {
		return &ParamError{Param: ParamPeriod, Want: "a calendar is for a calendar limit only"}
	}
	if l.Algorithm != Funnel && l.Burst != l.Rate {
		return &ParamError{Param: ParamBurst, Want: "must equal rate for sliding algorithms and concurrency"}
	}
	return nil
}

// CheckCost reports whether a request may cost n under this limit:
// 0 <= n <= Burst. A cost of 0 peeks: it is decided like any other and
// charges nothing, whatever the algorithm (Check.CheckOnly ignores the
// cost; CheckSettleCost bounds a settle's). A bad cost is a *ParamError
// for ParamCost. A Concurrency limit takes one slot whatever the cost, so
// any n >= 0 fits it.
func (l Limit) CheckCost(n int64) error {
	if n < 0 {
		return &ParamError{Param: ParamCost, Want: "must be >= 0"}
	}
	if n > l.Burst && l.Algorithm != Concurrency {
		return &ParamError{Param: ParamCost, Want: format.Sprintf("must be <= %d, the limit's capacity", l.Burst)}
	}
	return nil
}

// interval is the funnel's emission interval T in microseconds, rounded.
func (l Limit) interval() int64 {
	p := l.Period.Microseconds()
	return (p + l.Rate/2) / l.Rate
}

// args returns the script's a and b for this limit; a CalendarWindow
// limit's b is its bounds (Calendar.wire), and args returns 0.
func (l Limit) args() (a, b int64) {
	switch l.Algorithm {
	case CalendarWindow:
		return l.Rate, 0
	case SlidingLog, Concurrency:
		return l.Rate, l.Period.Microseconds()
	case SlidingCounter:
		return l.Rate, l.Period.Milliseconds()
	default:
		return l.Burst, l.interval()
	}
}

// Policy returns the quota and window a RateLimit-Policy header advertises:
// Rate per Period for the sliding algorithms (for CalendarWindow, its
// unit's nominal length: 1h, 1d, 7d, 30d); for Funnel, Burst per the time
// an empty funnel takes to fill (NewFunnel(16, 30, time.Minute): 16 per 32s);
// for Concurrency, Rate requests in flight and no window (0).
func (l Limit) Policy() (quota int64, window time.Duration) {
	switch l.Algorithm {
	case Funnel:
		return l.Burst, time.Duration(l.Burst*l.interval()) * time.Microsecond
	case Concurrency:
		return l.Rate, 0
	}
	return l.Rate, l.Period
}
