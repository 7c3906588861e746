// Package hotkey finds hot keys: those with many requests in one tick of
// a VM, counted in fixed memory.
package hotkey

// Sketch counts each key's requests in the current tick, in fixed
// memory: two rows of counters, each key counted in one counter per row
// by a hash; its count is the smaller of the two, never below the truth.
// A cold key that shares both counters with busy keys may pass for hot:
// it then takes batches it does not spend, which go back after max_hold.
type Sketch struct {
	rows [2][columns]uint16
}

const columns = 1024

// Add counts one request of key and returns the key's count this tick.
func (h *Sketch) Add(key []byte) int64 {
	x := uint64(14695981039346656037) // FNV-1a
	for _, b := range key {
		x = (x ^ uint64(b)) * 1099511628211
	}
	a, b := &h.rows[0][x%columns], &h.rows[1][(x>>32)%columns]
	if *a < 1<<16-1 {
		*a++
	}
	if *b < 1<<16-1 {
		*b++
	}
	return int64(min(*a, *b))
}
