package main

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
)

// funnelRun replays reserve-then-settle on one key of a funnel through the
// script's Go model (algorithms.Model), on a clock in seconds.
type funnelRun struct {
	m     *algorithms.Model
	limit algorithms.Limit
	// pts is the remaining over time: (seconds, tokens) pairs, a jump as
	// two pairs at one time.
	pts []float64
}

const (
	capacity = 1000
	epochUS  = int64(1_700_000_000) * 1_000_000
	key      = "llm-tokens"
)

func newFunnelRun() *funnelRun {
	l, err := algorithms.NewFunnel(capacity, capacity, time.Minute)
	if err != nil {
		panic(err)
	}
	return &funnelRun{m: algorithms.NewModel(), limit: l}
}

func us(t float64) int64 { return epochUS + int64(math.Round(t*1e6)) }

// remaining reads what is left at t, negative in debt, with a settle of
// cost 0 (which changes nothing), as ratelimitctl show reads a debt.
func (r *funnelRun) remaining(t float64) int64 {
	return r.m.Settle(us(t), []algorithms.Settle{{Key: key, Limit: r.limit}}).Results[0].Remaining
}

func (r *funnelRun) mark(t float64) { r.pts = append(r.pts, t, float64(r.remaining(t))) }

// reserve decides a request reserving cost at t.
func (r *funnelRun) reserve(t float64, cost int64) algorithms.Result {
	r.mark(t)
	d := r.m.Decide(us(t), nil, []algorithms.Check{{Key: key, Limit: r.limit, Cost: cost}})
	r.mark(t)
	return d.Results[0]
}

// settle charges used against reserved (admitted at at) at t.
func (r *funnelRun) settle(t, at float64, reserved, used int64) algorithms.Settled {
	r.mark(t)
	s := r.m.Settle(us(t), []algorithms.Settle{{Key: key, Limit: r.limit, At: us(at), Reserved: reserved, Cost: used}})
	r.mark(t)
	return s.Results[0]
}

// debtPaid is how long from t until nothing is owed: what a decide of
// cost 0 answers, as ratelimitctl show asks it.
func (r *funnelRun) debtPaid(t float64) float64 {
	d := r.m.Decide(us(t), nil, []algorithms.Check{{Key: key, Limit: r.limit}})
	return max(d.Results[0].RetryAfter, 0).Seconds()
}

// advance marks the remaining every half second from the last mark
// (excluded) up to to (excluded); there is a mark already.
func (r *funnelRun) advance(to float64) {
	t := math.Floor(r.pts[len(r.pts)-2]*2)/2 + 0.5
	for ; t < to; t += 0.5 {
		r.mark(t)
	}
}

// jump is the step the last reserve or settle made.
func (r *funnelRun) jump(kind jumpKind) jump {
	p := r.pts[len(r.pts)-4:]
	return jump{kind: kind, t: p[0], from: p[1], to: p[3]}
}

// reserveSettle draws the remaining of a 1,000-token-a-minute funnel over
// requests reserving 500 tokens each and settled after the fact: A uses
// less, B more, which leaves a debt that denies C until it is paid and
// 500 tokens fit again.
func reserveSettle() []byte {
	const (
		tA, tASettle, tB, tBSettle, tC = 0.0, 3.0, 9.0, 12.0, 15.0
		reserve                        = 500
		usedA, usedB                   = 300, 1140
		start, end                     = -3.0, 66.0
	)
	r := newFunnelRun()
	r.mark(start)
	var notes []string
	var jumps []jump
	say := func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) }

	r.advance(tA)
	a := r.reserve(tA, reserve)
	jumps = append(jumps, r.jump(reserved))
	say("%s: request A reserves %s (its x-max-tokens): remaining %s → %s", secs(tA), num(reserve), num(capacity), num(a.Remaining))

	r.advance(tASettle)
	s := r.settle(tASettle, tA, reserve, usedA)
	jumps = append(jumps, r.jump(refunded))
	say("%s: A's response reports %s tokens used: the settle refunds %s, remaining %s", secs(tASettle), num(usedA), num(-s.Applied), num(s.Remaining))

	r.advance(tB)
	b := r.reserve(tB, reserve)
	jumps = append(jumps, r.jump(reserved))
	say("%s: request B reserves %s: remaining %s", secs(tB), num(reserve), num(b.Remaining))

	r.advance(tBSettle)
	s = r.settle(tBSettle, tB, reserve, usedB)
	jumps = append(jumps, r.jump(charged))
	tClear := tBSettle + r.debtPaid(tBSettle)
	say("%s: B's response reports %s: the settle charges %s more, remaining %s: the key is in debt", secs(tBSettle), num(usedB), num(s.Applied), num(s.Remaining))

	r.advance(tC)
	owed := r.remaining(tC)
	c := r.reserve(tC, reserve)
	if c.Allowed {
		panic("C was admitted")
	}
	retry := math.Ceil(c.RetryAfter.Seconds())
	say("%s: request C asks to reserve %s: 429, Retry-After: %.0f (remaining %s; its headers show 0)", secs(tC), num(reserve), retry, num(owed))
	say("%s: the debt is paid (remaining 0), but C needs %s free", secs(tClear), num(reserve))

	tRetry := tC + retry
	r.advance(tRetry)
	c2 := r.reserve(tRetry, reserve)
	if !c2.Allowed {
		panic("C was denied again")
	}
	jumps = append(jumps, r.jump(reserved))
	say("%s: C comes back after its Retry-After: admitted, remaining %s", secs(tRetry), num(c2.Remaining))

	r.advance(end)
	r.mark(end)
	return drawTimeline(timeline{pts: r.pts, jumps: jumps, notes: notes, tC: tC, retry: retry, tDebt: tBSettle, tClear: tClear, need: reserve, start: start, end: end})
}

type jumpKind int

const (
	reserved jumpKind = iota
	refunded
	charged
)

// jump is a step of the remaining at one time.
type jump struct {
	kind     jumpKind
	t        float64
	from, to float64
}

// secs prints seconds as "12 s" or "26.4 s".
func secs(t float64) string { return strconv.FormatFloat(t, 'f', -1, 64) + " s" }

// num prints n with thousands separated by commas, and a minus sign.
func num(n int64) string {
	s := strconv.FormatInt(max(n, -n), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if n < 0 {
		return "−" + s
	}
	return s
}
