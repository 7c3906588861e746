package algorithms

import "sort"

// concTrim drops the expired slots of key (expiry <= now) and returns
// the expiries of those held, earliest first.
func (m *Model) concTrim(key string, now int64) []int64 {
	held := m.slots[key]
	var expiries []int64
	for id, exp := range held {
		if exp <= now {
			delete(held, id)
		} else {
			expiries = append(expiries, exp)
		}
	}
	sort.Slice(expiries, func(i, j int) bool { return expiries[i] < expiries[j] })
	return expiries
}

// concCheck is conc_check: a request takes one slot (n > 0 names it) or
// none (a peek).
func (m *Model) concCheck(key string, now, limit, d, n int64) outcome {
	expiries := m.concTrim(key, now)
	used := int64(len(expiries))
	var reset int64
	if used > 0 {
		reset = expiries[used-1] - now
	}
	w := int64(0)
	if n > 0 {
		w = 1
	}
	if used+w <= limit {
		if w == 0 {
			return outcome{ok: true, remaining: limit - used, retry: -1, reset: reset, commit: func() {}}
		}
		return outcome{ok: true, remaining: limit - used - 1, retry: -1, reset: max(reset, d), commit: func() {
			if m.slots[key] == nil {
				m.slots[key] = map[int64]int64{}
			}
			m.slots[key][n] = now + d
		}}
	}
	// The earliest used+w-limit slots must expire first.
	return outcome{remaining: max(0, limit-used), retry: expiries[used+w-limit-1] - now, reset: reset}
}

// concRelease is conc_settle: the slot s.Reserved leaves, unless it has
// expired already.
func (m *Model) concRelease(s Settle, now, limit int64) Settled {
	used := int64(len(m.concTrim(s.Key, now)))
	if _, ok := m.slots[s.Key][s.Reserved]; ok {
		delete(m.slots[s.Key], s.Reserved)
		return Settled{Applied: -1, Remaining: limit - used + 1}
	}
	return Settled{Remaining: limit - used}
}
