package wasmhost

// What a Host counted and holds, for tests and the admin endpoint.

// StuckStreams counts streams answered with 504 because the guest left them
// paused for Config.PauseTimeout. A correct filter keeps it at zero.
func (h *Host) StuckStreams() int64 { return h.stuck.Load() }

// Traps counts VMs failed by a guest trap (a Go panic, say).
func (h *Host) Traps() int64 { return h.traps.Load() }

// StreamsPerVM returns how many HTTP streams each VM was given.
func (h *Host) StreamsPerVM() []int64 {
	out := make([]int64, len(h.vms))
	for i, v := range h.vms {
		out[i] = v.served.Load()
	}
	return out
}

// Metrics returns the counters and gauges the guest defined, by name.
// A guest that buffers its metrics until its tick (the filter does) is
// first asked to hand them over, so that they count every request served.
func (h *Host) Metrics() map[string]int64 {
	h.flushMetrics()
	return h.metrics.snapshot()
}

// Metric returns one counter or gauge, and whether it is defined.
func (h *Host) Metric(name string) (int64, bool) {
	v, ok := h.Metrics()[name]
	return v, ok
}

// Histogram returns the values recorded in a histogram, in order.
func (h *Host) Histogram(name string) []uint64 {
	h.flushMetrics()
	return h.metrics.histogram(name)
}

// flushMetrics runs each VM's flush on its loop (vm.flushMetrics); a VM
// that has shut down flushed when its plugin was done.
func (h *Host) flushMetrics() {
	for _, v := range h.vms {
		v.run(func() error { v.flushMetrics(); return nil })
	}
}

// SharedData returns a shared data entry and its CAS value.
func (h *Host) SharedData(key string) (value []byte, cas uint32, ok bool) {
	val, cas, ok := h.shared.get(key)
	return append([]byte(nil), val...), cas, ok
}

// RedisCalls returns how many proxy_redis_call calls each cluster accepted.
func (h *Host) RedisCalls() map[string]int64 {
	h.redisMu.Lock()
	defer h.redisMu.Unlock()
	out := make(map[string]int64, len(h.redisCnt))
	for k, n := range h.redisCnt {
		out[k] = n
	}
	return out
}

func (h *Host) countRedisCall(cluster string) {
	h.redisMu.Lock()
	h.redisCnt[cluster]++
	h.redisMu.Unlock()
}
