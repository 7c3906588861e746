package algorithms

// Settle runs one settle call at now (microseconds since the epoch), as
// the script's settle.lua does.
func (m *Model) Settle(now int64, settles []Settle) Settlement {
	st := Settlement{Now: now}
	for _, s := range settles {
		a, b := s.Limit.args()
		var r Settled
		switch s.Limit.Algorithm {
		case SlidingLog:
			r = m.logSettle(s, now, a, b)
		case SlidingCounter:
			r = m.counterSettle(s, now, a, b)
		case Concurrency:
			r = m.concRelease(s, now, a)
		case CalendarWindow:
			r = m.calendarSettle(s, now, a)
		default:
			r = m.funnelSettle(s, now, a, b)
		}
		st.Results = append(st.Results, r)
	}
	return st
}

// funnelSettle moves the TAT by d·T, never below now; Applied is the
// change in units left.
func (m *Model) funnelSettle(s Settle, now, capacity, t int64) Settled {
	tau := capacity * t
	tat, ok := m.tats[s.Key]
	if !ok || tat < now {
		tat = now
	}
	newTat := max(now, tat+(s.Cost-s.Reserved)*t)
	if newTat > now {
		m.tats[s.Key] = newTat
	} else if newTat != tat {
		delete(m.tats, s.Key)
	}
	left := floorDiv(now-newTat+tau, t)
	return Settled{Applied: floorDiv(now-tat+tau, t) - left, Remaining: left}
}

// counterSettle moves the count of At's window, the current or the
// previous one, by d, never below 0; in an older window the record is
// gone, and a charge goes to the current window.
func (m *Model) counterSettle(s Settle, now, limit, w int64) Settled {
	idx, e := counterWindow(now, w)
	var cur, prev int64
	if st, ok := m.counters[s.Key]; ok {
		switch st.window {
		case idx:
			cur, prev = st.cur, st.prev
		case idx - 1:
			prev = st.cur
		}
	}
	d := s.Cost - s.Reserved
	atIdx := idx
	if s.Reserved > 0 {
		atIdx, _ = counterWindow(s.At, w)
	}
	if atIdx == idx-1 {
		d = max(-prev, d)
		prev += d
	} else {
		if atIdx != idx && d < 0 {
			d = 0
		}
		d = max(-cur, d)
		cur += d
	}
	if d != 0 {
		m.counters[s.Key] = counterState{window: idx, cur: cur, prev: prev}
	}
	return Settled{Applied: d, Remaining: floorDiv(limit*w-prev*(w-e)-cur*w, w)}
}

// counterWindow is counter_window: the index of now's window, and the
// milliseconds into it.
func counterWindow(now, w int64) (idx, e int64) {
	nowMS := now / 1000
	idx = nowMS / w
	return idx, nowMS - idx*w
}
