package e2e

import (
	"fmt"
	"testing"
	"time"
)

// tester is what a check needs of its test: a *testing.T, or an attempt
// of a timed check.
type tester interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// attempt is one run of a timed check. It is a *testing.T whose Fatal,
// Fatalf, Error and Errorf end the run instead of failing the test; timed
// decides whether the failure counts. Like FailNow, they must be called
// from the goroutine running the check.
type attempt struct {
	*testing.T
	began  time.Time
	budget time.Duration
}

// attemptEnded is what a failing attempt panics with; timed recovers it.
type attemptEnded struct {
	msg  string
	took time.Duration // since the attempt began
	over bool          // took the budget or more: the checks' premise fails
}

func (a *attempt) Fatal(args ...any)                 { a.end(fmt.Sprint(args...)) }
func (a *attempt) Fatalf(format string, args ...any) { a.end(fmt.Sprintf(format, args...)) }
func (a *attempt) Error(args ...any)                 { a.end(fmt.Sprint(args...)) }
func (a *attempt) Errorf(format string, args ...any) { a.end(fmt.Sprintf(format, args...)) }

func (a *attempt) end(msg string) {
	took := time.Since(a.began)
	panic(attemptEnded{msg: msg, took: took, over: took >= a.budget})
}

// setBudget changes the attempt's budget, counted from its start: a check
// with phases gives each phase the time its checks assume.
func (a *attempt) setBudget(d time.Duration) { a.budget = d }

// maxAttempts bounds the runs of a timed check.
const maxAttempts = 5

// timed runs a check whose assertions assume that everything it sends is
// decided within budget of its start, as exact Retry-After seconds or a
// funnel that must not drain in between do. The premise is measured, on
// this process's clock, from before the first request to the failure:
// every decision lies within that span, so when the span is shorter than
// budget the assertions hold at any speed, and a failure fails the test.
// A failure after the budget ran out proves nothing, and the check runs
// again, up to maxAttempts times; it must use fresh keys each time (a new
// redistest.Prefix).
func timed(t *testing.T, budget time.Duration, check func(t *attempt)) {
	t.Helper()
	for n := range maxAttempts {
		a := &attempt{T: t, began: time.Now(), budget: budget}
		ended := runAttempt(a, check)
		switch {
		case ended == nil:
			return
		case !ended.over:
			t.Fatal(ended.msg)
		}
		t.Logf("attempt %d failed after %v, over the %v its checks assume; running it again: %s",
			n+1, ended.took.Round(time.Millisecond), a.budget, ended.msg)
	}
	t.Fatalf("%d attempts all took longer than their checks assume", maxAttempts)
}

// runAttempt runs one attempt and returns how it ended, or nil if it passed.
func runAttempt(a *attempt, check func(t *attempt)) (ended *attemptEnded) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(attemptEnded)
			if !ok {
				panic(r)
			}
			ended = &e
		}
	}()
	check(a)
	return nil
}
