package algorithms

import "strings"

// Param names a parameter of a Limit, or a request's cost, in the terms
// of this package; a configuration may call it otherwise (a funnel's
// Burst is its "capacity", a sliding window's Period its "window").
type Param string

const (
	ParamAlgorithm Param = "algorithm"  // Limit.Algorithm
	ParamRate      Param = "rate"       // Limit.Rate: a sliding window's or concurrency limit's limit, a funnel's rate, a token bucket's refill
	ParamBurst     Param = "burst"      // Limit.Burst: a funnel's or token bucket's capacity
	ParamPeriod    Param = "period"     // Limit.Period: a sliding window's window, a concurrency limit's max_duration
	ParamCost      Param = "cost"       // the n of Limit.CheckCost
	ParamZone      Param = "zone"       // Calendar.Zone
	ParamWeekStart Param = "week_start" // Calendar.WeekStart
)

// ParamError is a parameter out of range, as Limit.Validate and
// Limit.CheckCost report it. Its Error is "<param>: <message>", such as
// "rate: must be >= 1" or "rate: period / rate must be >= 1us"; a caller
// that names the parameter otherwise renders the message with Message.
type ParamError struct {
	// Param is the parameter at fault.
	Param Param
	// Expr is the quantity out of range when it is not Param alone: a
	// format in which %s stands for Param, such as "period / %s". Empty
	// when Param itself is out of range.
	Expr string
	// Want is the constraint broken, such as "must be >= 1".
	Want string
}

func (e *ParamError) Error() string { return string(e.Param) + ": " + e.Message(string(e.Param)) }

// Message is what is wrong, calling Param name: for
// ParamError{Param: ParamRate, Expr: "period / %s", Want: "must be >= 1us"},
// Message("refill") is "period / refill must be >= 1us", and for
// ParamError{Param: ParamRate, Want: "must be >= 1"} it is "must be >= 1".
func (e *ParamError) Message(name string) string {
	if e.Expr == "" {
		return e.Want
	}
	return strings.Replace(e.Expr, "%s", name, 1) + " " + e.Want
}
