package wasmhost

import (
	"sort"
	"sync"
)

// metricStore holds the metrics of all VMs of a Host. As in Envoy, a metric
// is keyed by its name, so every VM that defines "requests" shares one
// counter. Ids carry the metric type in their two low bits, as Envoy's do.
type metricStore struct {
	mu     sync.Mutex
	byName map[string]uint32
	byID   map[uint32]*metric
	nextID uint32
}

type metric struct {
	name   string
	kind   uint32
	value  int64    // counter or gauge
	values []uint64 // histogram samples
}

func newMetricStore() *metricStore {
	return &metricStore{byName: map[string]uint32{}, byID: map[uint32]*metric{}}
}

// define returns the id of the metric named name, creating it if needed.
// Redefining a name with another type is refused (BadArgument).
func (s *metricStore) define(kind uint32, name string) (uint32, uint32) {
	if kind > metricHistogram {
		return 0, statusBadArgument
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.byName[name]; ok {
		if s.byID[id].kind != kind {
			return 0, statusBadArgument
		}
		return id, statusOK
	}
	s.nextID++
	id := s.nextID<<2 | kind
	s.byName[name] = id
	s.byID[id] = &metric{name: name, kind: kind}
	return id, statusOK
}

// increment follows Envoy: counters only go up (offset must be > 0), gauges
// go either way, histograms cannot be incremented.
func (s *metricStore) increment(id uint32, offset int64) uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.byID[id]
	if !ok {
		if id&3 > metricGauge {
			return statusBadArgument
		}
		return statusNotFound
	}
	switch m.kind {
	case metricCounter:
		if offset <= 0 {
			return statusBadArgument
		}
		m.value += offset
	case metricGauge:
		m.value += offset
	default:
		return statusBadArgument
	}
	return statusOK
}

// record adds to a counter, sets a gauge or records a histogram sample.
func (s *metricStore) record(id uint32, value uint64) uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.byID[id]
	if !ok {
		return statusNotFound
	}
	switch m.kind {
	case metricCounter:
		m.value += int64(value)
	case metricGauge:
		m.value = int64(value)
	default:
		m.values = append(m.values, value)
	}
	return statusOK
}

// get reads a counter or gauge; histograms cannot be read (BadArgument).
func (s *metricStore) get(id uint32) (uint64, uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.byID[id]
	if !ok {
		if id&3 > metricGauge {
			return 0, statusBadArgument
		}
		return 0, statusNotFound
	}
	if m.kind == metricHistogram {
		return 0, statusBadArgument
	}
	return uint64(m.value), statusOK
}

func (s *metricStore) snapshot() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int64{}
	for _, m := range s.byID {
		if m.kind != metricHistogram {
			out[m.name] = m.value
		}
	}
	return out
}

func (s *metricStore) histogram(name string) []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.byName[name]
	if !ok || s.byID[id].kind != metricHistogram {
		return nil
	}
	return append([]uint64(nil), s.byID[id].values...)
}

// StatKind is the type of a metric the guest defined.
type StatKind uint32

// Metric types, as proxy_define_metric numbers them.
const (
	StatCounter   = StatKind(metricCounter)
	StatGauge     = StatKind(metricGauge)
	StatHistogram = StatKind(metricHistogram)
)

// Stat is one metric the guest defined, as Host.Stats returns it.
type Stat struct {
	Name    string
	Kind    StatKind
	Value   int64    // a counter's or a gauge's value
	Samples []uint64 // a histogram's values, in the order recorded
}

// Stats returns every metric the guest defined, sorted by name, once the
// guest has handed over what it buffers (see Metrics).
func (h *Host) Stats() []Stat {
	h.flushMetrics()
	return h.metrics.stats()
}

func (s *metricStore) stats() []Stat {
	s.mu.Lock()
	out := make([]Stat, 0, len(s.byID))
	for _, m := range s.byID {
		st := Stat{Name: m.name, Kind: StatKind(m.kind), Value: m.value}
		if m.kind == metricHistogram {
			st.Samples = append([]uint64(nil), m.values...)
		}
		out = append(out, st)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
