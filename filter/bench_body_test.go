package filter

import (
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// benchChatBody is a Chat Completions request of about 600 bytes.
const benchChatBody = `{"model":"gpt-4o","max_tokens":400,"temperature":0.2,"user":"alice","metadata":{"team":"search"},
"messages":[{"role":"system","content":"You are a helpful assistant that answers briefly and cites sources."},
{"role":"user","content":"Summarise the attached changelog for the release notes, in three bullet points, and name the breaking changes first. Keep each bullet under twenty words."}],
"stream":false,"stream_options":null,"tools":[{"type":"function","function":{"name":"search","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}}]}`

// BenchmarkRequestBodyKey is BenchmarkRequest's rule keyed on the body's
// model too: the headers go on, the body's end decides.
func BenchmarkRequestBodyKey(b *testing.B) {
	benchBody(b, `{"redis":{"cluster":"redis"},"rules":[{"name":"api","match":{"path_prefix":"/api/"},
	"key":[{"source":"header","name":"x-user"},{"source":"path"},{"source":"body","path":"model"}],
	"limits":[{"name":"second","algorithm":"sliding_log","limit":10,"window":"1s"},
	          {"name":"minute","algorithm":"funnel","capacity":100,"rate":100,"period":"1m"}]}]}`, true)
}

// BenchmarkRequestBesideBodyRule is BenchmarkRequest's request, with a body,
// in a configuration that also has a body rule it does not match: decided
// at its headers, as without the body rule.
func BenchmarkRequestBesideBodyRule(b *testing.B) {
	benchBody(b, `{"redis":{"cluster":"redis"},"rules":[{"name":"api","match":{"path_prefix":"/api/"},
	"key":[{"source":"header","name":"x-user"},{"source":"path"}],
	"limits":[{"name":"second","algorithm":"sliding_log","limit":10,"window":"1s"},
	          {"name":"minute","algorithm":"funnel","capacity":100,"rate":100,"period":"1m"}]},
	{"name":"llm","match":{"path_prefix":"/v1/"},"key":[{"source":"body","path":"model"}],
	 "limits":[{"algorithm":"sliding_log","limit":10,"window":"1s"}]}]}`, false)
}

func benchBody(b *testing.B, conf string, readsBody bool) {
	cfg, err := config.Parse([]byte(conf))
	if err != nil {
		b.Fatal(err)
	}
	h := &benchHost{}
	p := NewPlugin(cfg, h)
	reply := redisproto.AppendArrayLen(nil, 12)
	for _, v := range []int64{1700000000000000, -2, 1, 10, 9, -1, 1000000, 1, 100, 99, -1, 600000} {
		reply = redisproto.AppendInt(reply, v)
	}
	headers := [][2]string{{":method", "POST"}, {":path", "/api/orders?page=2"}, {":authority", "example.com"},
		{"user-agent", "bench"}, {"x-user", "alice"}, {"accept", "*/*"}}
	body := []byte(benchChatBody)
	s := &benchStream{}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		st := p.NewStream(s)
		st.SetBodyFollows(true)
		a := st.OnRequestHeaders(headers)
		if readsBody {
			if a != Continue || !st.WantsRequestBody() || st.OnRequestBody(body) != Pause {
				b.Fatal("not decided at the body's end")
			}
		} else if a != Pause || st.WantsRequestBody() {
			b.Fatal("not decided at the headers")
		}
		p.OnRedisReply(h.id, true, reply)
		st.OnResponseHeaders(true)
		st.OnDone()
	}
	if s.resumed != b.N || s.headers != 2*b.N {
		b.Fatalf("resumed %d, headers %d for %d requests", s.resumed, s.headers, b.N)
	}
}
