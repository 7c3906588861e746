package filter

import (
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// benchHost answers nothing by itself: the benchmark hands each dispatched
// call a canned reply, so only the filter's own work is measured.
type benchHost struct {
	id  uint32
	cmd int // bytes dispatched
}

func (h *benchHost) DispatchRedis(cmd []byte) (uint32, error) {
	h.id++
	h.cmd += len(cmd)
	return h.id, nil
}
func (h *benchHost) DispatchHTTP(string, [][2]string, []byte, time.Duration) (uint32, error) {
	return 0, nil
}
func (h *benchHost) Log(LogLevel, string)       {}
func (h *benchHost) Now() time.Time             { return time.Time{} }
func (h *benchHost) Counter(string) Counter     { return nopMetric{} }
func (h *benchHost) Gauge(string) Gauge         { return nopMetric{} }
func (h *benchHost) Histogram(string) Histogram { return nopMetric{} }

type nopMetric struct{}

func (nopMetric) Increment(uint64) {}
func (nopMetric) Add(int64)        {}
func (nopMetric) Record(uint64)    {}

type benchStream struct{ resumed, replied, headers int }

func (s *benchStream) SourceAddress() string                   { return "10.0.0.1:5555" }
func (s *benchStream) Property(string) string                  { return "" }
func (s *benchStream) PropertyPath([]string) ([]byte, bool)    { return nil, false }
func (s *benchStream) Resume()                                 { s.resumed++ }
func (s *benchStream) SendLocalReply(int, [][2]string, []byte) { s.replied++ }
func (s *benchStream) AddResponseHeader(string, string)        { s.headers++ }
func (s *benchStream) SetDecision([]byte)                      {}

const benchConfig = `{"redis":{"cluster":"redis"},"rules":[{"name":"api","match":{"path_prefix":"/api/"},
	"key":[{"source":"header","name":"x-user"},{"source":"path"}],
	"limits":[{"name":"second","algorithm":"sliding_log","limit":10,"window":"1s"},
	          {"name":"minute","algorithm":"funnel","capacity":100,"rate":100,"period":"1m"}]}]}`

// BenchmarkRequest is one allowed request, natively: headers, key, command,
// reply, decision, response headers. Compare with the same path in wasm
// (make bench) for the cost of the VM.
func BenchmarkRequest(b *testing.B) {
	benchRequest(b, benchConfig, []int64{1700000000000000, -2, 1, 10, 9, -1, 1000000, 1, 100, 99, -1, 600000})
}

// BenchmarkRequestTiered is BenchmarkRequest's rule with tiers and an
// override read from Redis, whose reply picks the default tier.
func BenchmarkRequestTiered(b *testing.B) {
	benchRequest(b, benchTieredConfig, []int64{1700000000000000, -2, 1,
		1, 10, 9, -1, 1000000, 1, 1000000, 1, 100, 99, -1, 600000, 3, 600000})
}

const benchTieredConfig = `{"redis":{"cluster":"redis"},"rules":[{"name":"api","match":{"path_prefix":"/api/"},
	"key":[{"source":"header","name":"x-user"},{"source":"path"}],"overrides":true,
	"tiers":{"from":"redis","default":"free","limits":{
	  "free":[{"name":"second","algorithm":"sliding_log","limit":10,"window":"1s"},
	          {"name":"minute","algorithm":"funnel","capacity":100,"rate":100,"period":"1m"}],
	  "pro":[{"algorithm":"sliding_log","limit":100,"window":"1s"},
	          {"algorithm":"funnel","capacity":1000,"rate":1000,"period":"1m"}]}}}]}`

func benchRequest(b *testing.B, conf string, replyInts []int64) {
	cfg, err := config.Parse([]byte(conf))
	if err != nil {
		b.Fatal(err)
	}
	h := &benchHost{}
	p := NewPlugin(cfg, h)
	reply := redisproto.AppendArrayLen(nil, len(replyInts))
	for _, v := range replyInts {
		reply = redisproto.AppendInt(reply, v)
	}
	headers := [][2]string{{":method", "GET"}, {":path", "/api/orders?page=2"}, {":authority", "example.com"},
		{"user-agent", "bench"}, {"x-user", "alice"}, {"accept", "*/*"}}
	s := &benchStream{}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		st := p.NewStream(s)
		if st.OnRequestHeaders(headers) != Pause {
			b.Fatal("not paused")
		}
		p.OnRedisReply(h.id, true, reply)
		st.OnResponseHeaders(true)
		st.OnDone()
	}
	if s.resumed != b.N || s.headers != 2*b.N {
		b.Fatalf("resumed %d, headers %d for %d requests", s.resumed, s.headers, b.N)
	}
}

// BenchmarkDenyCacheHit is a request the deny cache denies, natively: the
// headers, the key, the lookup and the local reply last rendered for the
// key (a fresh denial by Redis fills the cache first).
func BenchmarkDenyCacheHit(b *testing.B) {
	cfg, err := config.Parse([]byte(benchConfig))
	if err != nil {
		b.Fatal(err)
	}
	h := &benchHost{}
	p := NewPlugin(cfg, h)
	denied := []int64{1700000000000000, -2, 0, 10, 0, 500000, 1000000, 1, 100, 100, -1, 0}
	reply := redisproto.AppendArrayLen(nil, len(denied))
	for _, v := range denied {
		reply = redisproto.AppendInt(reply, v)
	}
	headers := [][2]string{{":method", "GET"}, {":path", "/api/orders?page=2"}, {":authority", "example.com"},
		{"user-agent", "bench"}, {"x-user", "alice"}, {"accept", "*/*"}}
	s := &benchStream{}
	st := p.NewStream(s)
	if st.OnRequestHeaders(headers) != Pause {
		b.Fatal("not paused")
	}
	p.OnRedisReply(h.id, true, reply)
	st.OnDone()
	calls := h.id
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		st := p.NewStream(s)
		st.OnRequestHeaders(headers)
		st.OnDone()
	}
	if s.replied != b.N+1 || h.id != calls {
		b.Fatalf("%d local replies and %d calls for %d cached denials", s.replied, h.id-calls, b.N)
	}
}
