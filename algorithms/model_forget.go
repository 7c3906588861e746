package algorithms

// Forget drops key's state, as when the key expires in Redis: a Model that
// lives long (a VM's local fallback) stays bounded by forgetting the keys
// whose state no longer affects a decision.
func (m *Model) Forget(key string) {
	delete(m.tats, key)
	delete(m.logs, key)
	delete(m.counters, key)
	delete(m.slots, key)
}

// Len is the number of keys whose state the Model holds: what Forget
// bounds.
func (m *Model) Len() int {
	return len(m.tats) + len(m.logs) + len(m.counters) + len(m.slots)
}
