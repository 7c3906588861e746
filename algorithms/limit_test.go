package algorithms

import (
	"errors"
	"testing"
	"time"
)

func TestConstructorsRejectBadParameters(t *testing.T) {
	tests := []struct {
		name string
		l    func() (Limit, error)
		want string
	}{
		{"zero window", func() (Limit, error) { return NewSlidingLog(5, 0) }, "period: must be > 0"},
		{"limit < 1", func() (Limit, error) { return NewSlidingLog(0, time.Second) }, "rate: must be >= 1"},
		{"log too large", func() (Limit, error) { return NewSlidingLog(2<<20, time.Second) }, "rate: must be <= 1048576 for sliding_log (use sliding_counter)"},
		{"counter sub-ms", func() (Limit, error) { return NewSlidingCounter(5, 1500*time.Microsecond) }, "period: must be a whole number of milliseconds"},
		{"counter overflow", func() (Limit, error) { return NewSlidingCounter(1<<40, time.Hour) }, "rate: rate * period(ms) must be <= 2^50"},
		{"funnel zero capacity", func() (Limit, error) { return NewFunnel(0, 1, time.Second) }, "burst: must be >= 1"},
		{"funnel zero rate", func() (Limit, error) { return NewFunnel(1, 0, time.Second) }, "rate: must be >= 1"},
		{"funnel too fast", func() (Limit, error) { return NewFunnel(1, 3_000_000, time.Second) }, "rate: period / rate must be >= 1us"},
		{"funnel tau", func() (Limit, error) { return NewFunnel(1<<40, 1, time.Second) }, "burst: burst * period / rate must be <= 2^48us"},
		{"negative period", func() (Limit, error) { return TokenBucket(5, 1, -time.Second) }, "period: must be > 0"},
		{"concurrency zero", func() (Limit, error) { return NewConcurrency(0, time.Minute) }, "rate: must be >= 1"},
		{"concurrency too many", func() (Limit, error) { return NewConcurrency(2<<20, time.Minute) }, "rate: must be <= 1048576"},
		{"concurrency sub-ms", func() (Limit, error) { return NewConcurrency(5, time.Microsecond) }, "period: must be >= 1ms and <= 24h"},
		{"concurrency over a day", func() (Limit, error) { return NewConcurrency(5, 25*time.Hour) }, "period: must be >= 1ms and <= 24h"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.l()
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := NewSlidingCounter(1_000_000, time.Minute); err != nil {
		t.Fatalf("1,000,000 per minute must be accepted: %v", err)
	}
}

func TestCheckCost(t *testing.T) {
	log, _ := NewSlidingLog(5, time.Second)
	funnel, _ := NewFunnel(5, 1, time.Second)
	conc, _ := NewConcurrency(5, time.Second)
	for _, tc := range []struct {
		l    Limit
		n    int64
		want string
	}{
		{log, 1, ""}, {log, 5, ""}, {log, 0, ""}, {log, -1, "cost: must be >= 0"}, {log, 6, "cost: must be <= 5, the limit's capacity"},
		{funnel, 0, ""}, {funnel, -1, "cost: must be >= 0"}, {funnel, 6, "cost: must be <= 5, the limit's capacity"},
		{conc, 0, ""}, {conc, 1000, ""}, {conc, -1, "cost: must be >= 0"}, // one slot, whatever the cost
	} {
		err := tc.l.CheckCost(tc.n)
		if got := errString(err); got != tc.want {
			t.Errorf("%v cost %d: got %q, want %q", tc.l.Algorithm, tc.n, got, tc.want)
		}
	}
}

// Bad parameters are *ParamError values, which a caller can render in its
// own names for the parameters.
func TestParamErrors(t *testing.T) {
	_, err := TokenBucket(1, 3_000_000, time.Second)
	var pe *ParamError
	if !errors.As(err, &pe) || pe.Param != ParamRate || pe.Message("refill") != "period / refill must be >= 1us" {
		t.Fatalf("too fast: %#v", err)
	}
	_, err = NewSlidingLog(0, time.Second)
	if !errors.As(err, &pe) || pe.Param != ParamRate || pe.Message("limit") != "must be >= 1" {
		t.Fatalf("zero limit: %#v", err)
	}
	l := mustLimit(t)(NewFunnel(5, 1, time.Second))
	err = l.CheckCost(6)
	if !errors.As(err, &pe) || pe.Param != ParamCost || pe.Message("cost") != "must be <= 5, the limit's capacity" {
		t.Fatalf("cost: %#v", err)
	}
	if err := (Limit{}).Validate(); !errors.As(err, &pe) || pe.Param != ParamAlgorithm || err.Error() != "algorithm: unknown" {
		t.Fatalf("no algorithm: %#v", err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestFunnelIntervalRoundsToMicrosecond(t *testing.T) {
	l, _ := NewFunnel(7, 7, time.Second)
	if got := l.interval(); got != 142857 {
		t.Fatalf("7/s interval = %dus, want 142857", got)
	}
	if a, b := l.args(); a != 7 || b != 142857 {
		t.Fatalf("args = %d, %d", a, b)
	}
}

func TestParseAlgorithm(t *testing.T) {
	for _, a := range []Algorithm{SlidingLog, SlidingCounter, Funnel, Concurrency} {
		if got, err := ParseAlgorithm(a.String()); err != nil || got != a {
			t.Errorf("ParseAlgorithm(%q) = %v, %v", a.String(), got, err)
		}
	}
	if _, err := ParseAlgorithm("fixed_window"); err == nil {
		t.Error("fixed_window accepted")
	}
}
