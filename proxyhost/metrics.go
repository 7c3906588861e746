package proxyhost

import "github.com/redisrate/envoy-redis-ratelimit/filter"

// Counters and histograms collect in guest memory and go to the host on
// flush: on the tick, once a second (filter.Plugin.OnTick reports when),
// when the plugin is done, and when a test host asks (FlushMetrics). A
// request then makes no metric host call.
// Envoy reads its stats asynchronously, every 5 s by default
// (stats_flush_interval), so a second's lag is not what users see.
// A host that refuses the tick gets every value at once (direct): there
// would be no flush until the plugin is done. Gauges are not buffered.
type metricBuffer struct {
	counters   map[string]*bufferedCounter // by name: one per metric
	histograms []*bufferedHistogram
	direct     bool
}

// maxBufferedValues bounds a histogram's values between flushes: 8 KiB.
const maxBufferedValues = 1024

// bufferedCounter is a counter's increments since the last flush.
type bufferedCounter struct {
	m   counterMetric
	n   uint64
	buf *metricBuffer
}

func (c *bufferedCounter) Increment(d uint64) {
	if c.buf.direct {
		c.m.Increment(d)
		return
	}
	c.n += d
}

// bufferedHistogram is a histogram's values since the last flush; a full
// buffer is flushed at once (0 <= len(values) < maxBufferedValues).
type bufferedHistogram struct {
	m      histogramMetric
	values []uint64
	buf    *metricBuffer
}

func (h *bufferedHistogram) Record(v uint64) {
	h.values = append(h.values, v)
	if h.buf.direct || len(h.values) >= maxBufferedValues {
		h.flush()
	}
}

func (h *bufferedHistogram) flush() {
	for _, v := range h.values {
		h.m.Record(v)
	}
	h.values = h.values[:0]
}

func (b *metricBuffer) counter(name string) *bufferedCounter {
	c, ok := b.counters[name]
	if !ok {
		c = &bufferedCounter{m: defineCounter(name), buf: b}
		if b.counters == nil {
			b.counters = map[string]*bufferedCounter{}
		}
		b.counters[name] = c
	}
	return c
}

func (b *metricBuffer) histogram(name string) *bufferedHistogram {
	h := &bufferedHistogram{m: defineHistogram(name), buf: b}
	b.histograms = append(b.histograms, h)
	return h
}

// flush hands the host what collected since the last flush. The order of
// a map's counters does not matter: each is its own metric.
func (b *metricBuffer) flush() {
	for _, c := range b.counters {
		if c.n > 0 {
			c.m.Increment(c.n)
			c.n = 0
		}
	}
	for _, h := range b.histograms {
		h.flush()
	}
}

// FlushMetrics hands the host every plugin's buffered counters and
// histograms now, rather than at the next tick; for test hosts, which read
// metrics right after a request (the wasm build exports it as
// ratelimit_flush_metrics).
func FlushMetrics() {
	for _, p := range plugins {
		p.metrics.flush()
	}
}

func (p *pluginContext) Counter(name string) filter.Counter { return p.metrics.counter(name) }

func (p *pluginContext) Histogram(name string) filter.Histogram { return p.metrics.histogram(name) }

func (p *pluginContext) Gauge(name string) filter.Gauge {
	return defineGauge(name)
}
