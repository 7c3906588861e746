package algorithms

import "time"

// Model is the pure Go reference of the script: the same decisions,
// settlements and numbers, with the time passed in. Property tests replay a real
// script's calls through it, at the times the script reported, and demand
// exact agreement.
//
// Keys expire in Redis only once their state no longer affects a decision,
// so the Model does not track TTLs.
type Model struct {
	tats      map[string]int64
	logs      map[string][]logEntry
	counters  map[string]counterState
	slots     map[string]map[int64]int64 // a concurrency key's slots: id -> expiry
	calendars map[string]calendarState
	// Tiers and Overrides are the tier and override keys an operator set:
	// a tier's name, an override's value (see EncodeOverride).
	Tiers, Overrides map[string]string
}

type counterState struct{ window, cur, prev int64 }

// NewModel returns a Model with every key empty.
func NewModel() *Model {
	return &Model{tats: map[string]int64{}, logs: map[string][]logEntry{}, counters: map[string]counterState{},
		slots: map[string]map[int64]int64{}, calendars: map[string]calendarState{}, Tiers: map[string]string{}, Overrides: map[string]string{}}
}

// outcome is one limit's verdict, in the script's units, before commit.
type outcome struct {
	ok                      bool
	remaining, retry, reset int64
	commit                  func()
}

// Decide runs one script call at now (microseconds since the epoch).
// blockPTTLs are the block keys' PTTLs in milliseconds: -2 when absent.
func (m *Model) Decide(now int64, blockPTTLs []int64, checks []Check) Decision {
	return m.DecideCall(now, blockPTTLs, checks, nil)
}

// DecideCall is Decide for a call with choices, picked from m.Tiers and
// m.Overrides as the script picks them.
func (m *Model) DecideCall(now int64, blockPTTLs []int64, checks []Check, choices []Choice) Decision {
	d := Decision{Now: now}
	for i, blockPTTL := range blockPTTLs {
		if blockPTTL == -2 {
			continue
		}
		d.Blocked, d.BlockedBy, d.BlockedFor = true, i, time.Duration(blockPTTL)*time.Millisecond
		if blockPTTL == -1 {
			d.BlockedFor = -1
		}
		return d
	}
	n := len(checks)
	checks, slots := m.expand(checks, choices, &d)
	at, late := m.throttle(checks, choices, slots, now)
	outs := make([]outcome, len(checks))
	all := true
	for i, c := range checks {
		switch {
		case c.CheckOnly:
			outs[i] = m.check(c, now, 1)
			if outs[i].ok {
				outs[i] = m.check(c, now, 0)
			}
		case late[i]:
			outs[i] = m.check(c, at, c.Cost)
			outs[i].reset += at - now
		default:
			outs[i] = m.check(c, now, c.Cost)
			if outs[i].ok && at > now && c.Limit.Algorithm == Funnel && c.Cost > 0 {
				outs[i].commit = m.check(c, at, c.Cost).commit // goes on at at
			}
		}
		all = all && outs[i].ok
	}
	if all && at > now {
		d.Delay = time.Duration(at-now) * time.Microsecond
	}
	if all {
		m.lease(checks, choices, slots, outs, now, at > now, &d)
	} else if len(choices) > 0 {
		d.Granted = make([]int64, len(choices))
	}
	for i, c := range checks {
		o := outs[i]
		if all {
			o.commit()
		} else if o.ok {
			o = m.check(c, now, 0)
		}
		a, _ := c.Limit.args()
		r := Result{Allowed: o.ok, Limit: a, Remaining: o.remaining, RetryAfter: -1,
			ResetAfter: time.Duration(o.reset) * time.Microsecond}
		if !o.ok {
			r.RetryAfter = time.Duration(o.retry) * time.Microsecond
		}
		d.Results = append(d.Results, r)
	}
	if len(choices) == 0 {
		return d
	}
	// Lay the choices' results out by position, unused ones included.
	decided := d.Results
	d.Results = append([]Result(nil), decided[:n]...)
	for _, i := range slots {
		if i < 0 {
			d.Results = append(d.Results, Result{Allowed: true, RetryAfter: -1})
		} else {
			d.Results = append(d.Results, decided[i])
		}
	}
	return d
}

// lease grows each lease's checks to the most units, up to the lease's
// most, that all of them admit, re-checked at that cost, and records each
// choice's grant in d.Granted.
func (m *Model) lease(checks []Check, choices []Choice, slots []int, outs []outcome, now int64, held bool, d *Decision) {
	at := 0
	for _, c := range choices {
		positions := slots[at : at+len(c.Keys)]
		at += len(c.Keys)
		if c.Lease == 0 {
			d.Granted = append(d.Granted, 0)
			continue
		}
		extra := c.Lease - c.Cost
		if held {
			extra = 0
		}
		for _, i := range positions {
			if i < 0 {
				continue
			}
			if checks[i].Limit.Algorithm == Concurrency {
				extra = 0
			}
			extra = min(extra, outs[i].remaining)
		}
		if extra > 0 {
			for _, i := range positions {
				if i >= 0 {
					checks[i].Cost += extra
					outs[i] = m.check(checks[i], now, checks[i].Cost)
				}
			}
		}
		d.Granted = append(d.Granted, c.Cost+max(extra, 0))
	}
}

// throttle returns the time as of which the throttles' funnels decide, the
// latest at which a throttle's funnels all conform within its max delay,
// and which checks decide then.
func (m *Model) throttle(checks []Check, choices []Choice, slots []int, now int64) (int64, []bool) {
	at, late, first := now, make([]bool, len(checks)), 0
	for _, c := range choices {
		positions := slots[first : first+len(c.Keys)]
		first += len(c.Keys)
		if c.Throttle <= 0 {
			continue
		}
		conform := now
		for _, i := range positions {
			if i < 0 || checks[i].Limit.Algorithm != Funnel {
				continue
			}
			burst, t := checks[i].Limit.args()
			tat, ok := m.tats[checks[i].Key]
			if !ok {
				tat = now
			}
			conform = max(conform, max(tat, now)+(checks[i].Cost-burst)*t)
		}
		if conform-now > c.Throttle.Microseconds() {
			continue
		}
		at = max(at, conform)
		for _, i := range positions {
			if i >= 0 && checks[i].Limit.Algorithm == Funnel {
				late[i] = true
			}
		}
	}
	return at, late
}

// expand appends to checks the limits each choice picks, and returns, per
// choice position, the index of its check, or -1 when unused; it fills
// d.Picks and d.Picked.
func (m *Model) expand(checks []Check, choices []Choice, d *Decision) ([]Check, []int) {
	if len(choices) == 0 {
		return checks, nil
	}
	checks = append([]Check(nil), checks...)
	var slots []int
	for _, c := range choices {
		pick, limits := 0, c.Tiers[0].Limits
		if v, ok := m.Overrides[c.OverrideKey]; ok && c.OverrideKey != "" {
			if ov, err := DecodeOverride(v); err == nil && len(ov) <= len(c.Keys) && calendarsOf(ov, c.Tiers[0].Limits) {
				pick, limits = PickOverride, ov
			}
		}
		if pick != PickOverride && c.TierKey != "" {
			for ti, t := range c.Tiers {
				if ti > 0 && t.Name == m.Tiers[c.TierKey] {
					pick, limits = ti, t.Limits
					break
				}
			}
		}
		d.Picks = append(d.Picks, pick)
		for p, key := range c.Keys {
			if p >= len(limits) {
				slots = append(slots, -1)
				d.Picked = append(d.Picked, Limit{})
				continue
			}
			slots = append(slots, len(checks))
			chk := Check{Key: key, Limit: limits[p], Cost: c.Cost, CheckOnly: c.CheckOnly}
			if chk.Limit.Algorithm == Concurrency && c.Slot > 0 {
				chk.Cost, chk.CheckOnly = c.Slot, false
			}
			checks = append(checks, chk)
			d.Picked = append(d.Picked, limits[p])
		}
	}
	return checks, slots
}

func (m *Model) check(c Check, now, n int64) outcome {
	a, b := c.Limit.args()
	switch c.Limit.Algorithm {
	case SlidingLog:
		return m.logCheck(c.Key, now, a, b, n)
	case SlidingCounter:
		return m.counterCheck(c.Key, now, a, b, n)
	case Concurrency:
		return m.concCheck(c.Key, now, a, b, n)
	case CalendarWindow:
		return m.calendarCheck(c.Key, now, a, c.Limit.Calendar, n)
	default:
		return m.funnelCheck(c.Key, now, a, b, n)
	}
}

func (m *Model) funnelCheck(key string, now, capacity, t, n int64) outcome {
	tau := capacity * t
	tat, ok := m.tats[key]
	if !ok || tat < now {
		tat = now
	}
	newTat := tat + n*t
	diff := now - (newTat - tau)
	if diff < 0 {
		return outcome{remaining: max(0, floorDiv(now-tat+tau, t)), retry: -diff, reset: tat - now}
	}
	return outcome{ok: true, remaining: floorDiv(diff, t), retry: -1, reset: newTat - now, commit: func() {
		if n > 0 {
			m.tats[key] = newTat
		}
	}}
}

func (m *Model) counterCheck(key string, now, limit, w, n int64) outcome {
	nowMS := now / 1000
	idx := nowMS / w
	e := nowMS - idx*w
	sub := now - nowMS*1000
	var cur, prev int64
	if st, ok := m.counters[key]; ok {
		switch st.window {
		case idx:
			cur, prev = st.cur, st.prev
		case idx - 1:
			prev = st.cur
		}
	}
	free := limit*w - prev*(w-e) - cur*w
	ok := n*w <= free && n > 0
	after := cur
	if ok {
		after = cur + n
	}
	var reset int64
	switch {
	case after > 0:
		reset = 2*w - e
	case prev > 0:
		reset = w - e
	}
	if reset > 0 {
		reset = reset*1000 - sub
	}
	if ok {
		return outcome{ok: true, remaining: floorDiv(free, w) - n, retry: -1, reset: reset, commit: func() {
			m.counters[key] = counterState{window: idx, cur: after, prev: prev}
		}}
	}
	if n*w <= free {
		return outcome{ok: true, remaining: floorDiv(free, w), retry: -1, reset: reset, commit: func() {}}
	}
	var d int64
	switch {
	case cur+n <= limit:
		d = w - floorDiv((limit-cur-n)*w, prev) - e
	case n <= limit:
		d = w - e + max(0, w-floorDiv((limit-n)*w, cur))
	default:
		d = 2*w - e
	}
	return outcome{remaining: max(0, floorDiv(free, w)), retry: d*1000 - sub, reset: reset}
}

// calendarsOf gives an override's calendar limits the period of the
// default tier's at their positions, in place; false when one has none,
// and the script ignores the override.
func calendarsOf(ov, defaults []Limit) bool {
	for p := range ov {
		if ov[p].Algorithm != CalendarWindow {
			continue
		}
		l, ok := withPeriodOf(ov[p], defaults, p)
		if !ok {
			return false
		}
		ov[p] = l
	}
	return true
}

// floorDiv is Lua's math.floor(a / b) for the exact integers the script uses.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
