package algorithms

import "sort"

// logEntry is one admission of a sliding log: its time and its weight, the
// units it holds. Entries are kept in time order.
type logEntry struct{ at, weight int64 }

// logTrim drops the entries that left the window and returns the rest and
// their total weight.
func (m *Model) logTrim(key string, now, window int64) ([]logEntry, int64) {
	log := m.logs[key]
	cut := sort.Search(len(log), func(i int) bool { return log[i].at > now-window })
	log = log[cut:]
	m.logs[key] = log
	var total int64
	for _, e := range log {
		total += e.weight
	}
	return log, total
}

// logInsert adds an entry at its place in time order.
func (m *Model) logInsert(key string, e logEntry) {
	log := m.logs[key]
	at := sort.Search(len(log), func(i int) bool { return log[i].at > e.at })
	grown := make([]logEntry, 0, len(log)+1)
	grown = append(grown, log[:at]...)
	grown = append(grown, e)
	m.logs[key] = append(grown, log[at:]...)
}

func (m *Model) logCheck(key string, now, limit, window, n int64) outcome {
	log, used := m.logTrim(key, now, window)
	if used+n <= limit && n > 0 {
		return outcome{ok: true, remaining: limit - used - n, retry: -1, reset: window, commit: func() {
			m.logInsert(key, logEntry{at: now, weight: n})
		}}
	}
	var reset int64
	if len(log) > 0 {
		reset = log[len(log)-1].at + window - now
	}
	if used+n <= limit {
		return outcome{ok: true, remaining: limit - used, retry: -1, reset: reset, commit: func() {}}
	}
	// The k oldest units must leave the window first.
	retry := window
	if k := used + n - limit; k <= used {
		for _, e := range log {
			if k -= e.weight; k <= 0 {
				retry = e.at + window - now
				break
			}
		}
	}
	return outcome{remaining: max(0, limit-used), retry: retry, reset: reset}
}

// logSettle is log_settle: the entry at at of weight reserved, while in the
// window, takes the weight cost; otherwise a charge is a new entry at now.
func (m *Model) logSettle(s Settle, now, limit, window int64) Settled {
	log, total := m.logTrim(s.Key, now, window)
	d := s.Cost - s.Reserved
	found := -1
	if s.Reserved > 0 && d != 0 {
		for i, e := range log {
			if e.at == s.At && e.weight == s.Reserved {
				found = i
				break
			}
		}
	}
	switch {
	case found >= 0 && s.Cost > 0:
		log[found].weight = s.Cost
	case found >= 0:
		m.logs[s.Key] = append(log[:found:found], log[found+1:]...)
	case d > 0:
		m.logInsert(s.Key, logEntry{at: now, weight: d})
	default:
		d = 0
	}
	return Settled{Applied: d, Remaining: limit - total - d}
}
