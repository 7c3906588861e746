package filter

import (
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/headermap"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// The plain rule of the V8 bench (e2e/v8, benchConfig): two limits keyed
// on a header, whose remaining counts take more than two digits.
const allocConfig = `{"redis":{"cluster":"redis","key_prefix":"x:"},
	"rules":[{"name":"bench","key":[{"source":"header","name":"x-user"}],
	"limits":[{"name":"per-second","algorithm":"funnel","capacity":1000000,"rate":1000000,"period":"1s"},
	{"name":"per-hour","algorithm":"sliding_counter","limit":100000000,"window":"1h"}]}]}`

// allocHeaders is a request's header map as the proxy serializes it.
var allocHeaders = headermap.Append(nil, [][2]string{{":method", "GET"}, {":path", "/api/orders"},
	{":authority", "api.example.com"}, {":scheme", "https"}, {"user-agent", "bench/1.0"}, {"accept", "*/*"}, {"x-user", "alice"}})

func replyOf(ints ...int64) []byte {
	b := redisproto.AppendArrayLen(nil, len(ints))
	for _, v := range ints {
		b = redisproto.AppendInt(b, v)
	}
	return b
}

// A plain rule's admitted request allocates twice natively: the call's
// keys as one string (call.seal) and the RateLimit header's value; a
// request the deny cache answers allocates nothing; one Redis denies,
// with the deny cache off, five times: the keys, the reply's headers, the
// RateLimit header's value, the Retry-After value and the body. Every allocation costs
// far more in wasm than natively; these counts do not depend on the
// machine.
func TestPlainRequestAllocs(t *testing.T) {
	cfg, err := config.Parse([]byte(allocConfig))
	if err != nil {
		t.Fatal(err)
	}
	h := &benchHost{}
	p := NewPlugin(cfg, h)
	s := &benchStream{}
	admitted := replyOf(1700000000000000, -2, 1, 1000000, 999999, -1, 0, 1, 100000000, 99999999, -1, 0)
	request := func(reply []byte) {
		st := p.NewStream(s)
		if st.OnRequestHeaderMap(allocHeaders) == Pause {
			p.OnRedisReply(h.id, true, reply)
		}
		st.OnResponseHeaders(true)
		st.OnDone()
	}
	if got := testing.AllocsPerRun(100, func() { request(admitted) }); got > 2 {
		t.Errorf("admitted: %.1f allocations per request, want at most 2", got)
	}
	if s.resumed == 0 || s.headers != 2*s.resumed {
		t.Fatalf("%d resumed, %d response headers: want every request admitted with 2 headers", s.resumed, s.headers)
	}
	denied := replyOf(1700000000000000, -2, 0, 1000000, 0, 500000, 1000000, 1, 100000000, 99999999, -1, 0)
	request(denied) // fills the deny cache
	replied, calls := s.replied, h.id
	if got := testing.AllocsPerRun(100, func() { request(denied) }); got > 0 {
		t.Errorf("denied from the deny cache: %.1f allocations per request, want 0", got)
	}
	if s.replied-replied != 101 || h.id != calls {
		t.Fatalf("%d local replies and %d calls for 101 cached denials", s.replied-replied, h.id-calls)
	}
	p, replied = deniedByRedis(t, h), s.replied
	if got := testing.AllocsPerRun(100, func() { request(deniedLong) }); got > 5 {
		t.Errorf("denied by Redis: %.1f allocations per request, want at most 5", got)
	}
	if s.replied-replied != 101 {
		t.Fatalf("%d local replies for 101 denials", s.replied-replied)
	}
}

// deniedLong denies allocConfig's hourly limit for most of an hour.
var deniedLong = replyOf(1700000000000000, -2, 1, 1000000, 999999, -1, 0, 0, 1, 0, 3500000000, 3600000000)

// deniedByRedis is a plugin of allocConfig with the deny cache off.
func deniedByRedis(tb testing.TB, h *benchHost) *Plugin {
	cfg, err := config.Parse([]byte(strings.Replace(allocConfig, `"rules"`, `"deny_cache":{"max_keys":0},"rules"`, 1)))
	if err != nil {
		tb.Fatal(err)
	}
	return NewPlugin(cfg, h)
}

// BenchmarkRequestPlain is TestPlainRequestAllocs's admitted request: the
// V8 bench's plain rule, from the header map as the proxy hands it over.
func BenchmarkRequestPlain(b *testing.B) {
	cfg, err := config.Parse([]byte(allocConfig))
	if err != nil {
		b.Fatal(err)
	}
	h := &benchHost{}
	p := NewPlugin(cfg, h)
	s := &benchStream{}
	reply := replyOf(1700000000000000, -2, 1, 1000000, 999999, -1, 0, 1, 100000000, 99999999, -1, 0)
	b.ReportAllocs()
	for b.Loop() {
		st := p.NewStream(s)
		if st.OnRequestHeaderMap(allocHeaders) != Pause {
			b.Fatal("not paused")
		}
		p.OnRedisReply(h.id, true, reply)
		st.OnResponseHeaders(true)
		st.OnDone()
	}
	if s.resumed == 0 || s.headers != 2*s.resumed {
		b.Fatalf("%d resumed, %d response headers", s.resumed, s.headers)
	}
}

// BenchmarkRequestDenied is a request of the plain rule that Redis denies,
// with the deny cache off: the local reply is rendered each time.
func BenchmarkRequestDenied(b *testing.B) {
	h, s := &benchHost{}, &benchStream{}
	p := deniedByRedis(b, h)
	b.ReportAllocs()
	for b.Loop() {
		st := p.NewStream(s)
		if st.OnRequestHeaderMap(allocHeaders) == Pause {
			p.OnRedisReply(h.id, true, deniedLong)
		}
		st.OnDone()
	}
	if s.replied == 0 {
		b.Fatal("no local reply")
	}
}
