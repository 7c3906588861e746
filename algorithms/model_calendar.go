package algorithms

// calendarState is a calendar key's: its period's end (us) and the units
// charged in it.
type calendarState struct{ end, used int64 }

// calendarUsed is what the period ending at end has charged.
func (m *Model) calendarUsed(key string, end int64) int64 {
	if st, ok := m.calendars[key]; ok && st.end == end {
		return st.used
	}
	return 0
}

// calendarCheck is calendar.lua's check, in the period that holds now.
func (m *Model) calendarCheck(key string, now, limit int64, cal Calendar, n int64) outcome {
	_, end := cal.period(now)
	used := m.calendarUsed(key, end)
	if used+n > limit {
		return outcome{remaining: max(0, limit-used), retry: end - now, reset: end - now}
	}
	after := used + n
	var reset int64
	if after > 0 {
		reset = end - now
	}
	return outcome{ok: true, remaining: limit - after, retry: -1, reset: reset, commit: func() {
		if n > 0 {
			m.calendars[key] = calendarState{end: end, used: after}
		}
	}}
}

// calendarSettle moves the admission's period's count by d while it is
// current, never below 0; once it has ended, a charge beyond the
// reservation goes to the period now, and a refund is nothing.
func (m *Model) calendarSettle(s Settle, now, limit int64) Settled {
	start, end := s.Limit.Calendar.period(now)
	used := m.calendarUsed(s.Key, end)
	d := s.Cost - s.Reserved
	if s.Reserved > 0 && s.At < start && d < 0 {
		d = 0
	}
	d = max(-used, d)
	if d != 0 {
		m.calendars[s.Key] = calendarState{end: end, used: used + d}
	}
	return Settled{Applied: d, Remaining: limit - used - d}
}
