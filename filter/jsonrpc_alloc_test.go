package filter

import (
	"strconv"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/headermap"
)

// batchConfig is an MCP rule keyed by the user and each call's tool.
const batchConfig = `{"redis":{"cluster":"redis","key_prefix":"x:"},"rules":[{"name":"tools",
	"key":[{"source":"header","name":"x-user"},{"source":"call","path":"params.name"}],
	"jsonrpc":{"protocol":"mcp","max_calls":100,"max_keys":8},"manual_block":false,
	"limits":[{"name":"minute","algorithm":"funnel","capacity":1000000,"rate":1000000,"period":"1m"}]}]}`

// batchBody is a batch of 100 tools/call over 8 tools.
func batchBody() []byte {
	var calls []string
	for i := range 100 {
		calls = append(calls, toolMsg(i, "tool-"+strconv.Itoa(i%8)))
	}
	return []byte(jsonArray(calls...))
}

// batchRequest returns a function sending one batch through p, answered
// with an admission of 8 keys.
func batchRequest(tb testing.TB, p *Plugin, h *benchHost, s *benchStream) func() {
	ints := []int64{1700000000000000, -2}
	for range 8 {
		ints = append(ints, 1, 1000000, 999000, -1, 60000000)
	}
	reply, body := replyOf(ints...), batchBody()
	headers := headermap.Append(nil, [][2]string{{":method", "POST"}, {":path", "/mcp"}, {":authority", "mcp"}, {"x-user", "alice"}})
	return func() {
		st := p.NewStream(s)
		st.SetBodyFollows(true)
		if st.OnRequestHeaderMap(headers) != Continue || !st.WantsRequestBody() || st.OnRequestBody(body) != Pause {
			tb.Fatal("not decided at the body's end")
		}
		p.OnRedisReply(h.id, true, reply)
		st.OnResponseHeaders(true)
		st.OnDone()
	}
}

// A batch of 100 calls over 8 keys, admitted, allocates as a plain
// body-keyed request does, whatever its calls: the calls, keys and costs
// live in the stream's recycled rpcState.
func TestBatchAllocs(t *testing.T) {
	cfg, err := config.Parse([]byte(batchConfig))
	if err != nil {
		t.Fatal(err)
	}
	h, s := &benchHost{}, &benchStream{}
	request := batchRequest(t, NewPlugin(cfg, h), h, s)
	request()
	if got := testing.AllocsPerRun(100, request); got > 2 {
		t.Errorf("admitted batch: %.1f allocations per request, want at most 2", got)
	}
	if s.resumed != 102 {
		t.Fatalf("%d resumed of 102", s.resumed)
	}
}

// BenchmarkRequestBatch is one 100-call batch over 8 tools (8 keys).
func BenchmarkRequestBatch(b *testing.B) {
	cfg, err := config.Parse([]byte(batchConfig))
	if err != nil {
		b.Fatal(err)
	}
	h, s := &benchHost{}, &benchStream{}
	request := batchRequest(b, NewPlugin(cfg, h), h, s)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		request()
	}
}
