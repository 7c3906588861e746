package gjsondiff

import (
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
	"github.com/tidwall/gjson"
)

// benchDocs are what the filter reads by path: a chat request's fields, a
// stream's last event's usage, a JWT payload's claim.
var benchDocs = []struct{ name, doc, path string }{
	{"body", `{"model":"gpt-4o","max_tokens":400,"temperature":0.2,"user":"alice","metadata":{"team":"search"},
"messages":[{"role":"system","content":"You are a helpful assistant that answers briefly and cites sources."},
{"role":"user","content":"Summarise the attached changelog for the release notes, in three bullet points, and name the breaking changes first. Keep each bullet under twenty words."}],
"stream":false,"stream_options":null,"tools":[{"type":"function","function":{"name":"search","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}}]}`, "metadata.team"},
	{"event", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1730000000,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":345,"total_tokens":1545}}`, "usage.completion_tokens"},
	{"claim", `{"iss":"https://issuer.example","sub":"alice","aud":["api"],"exp":1893456000,"org":{"id":"acme","tier":"gold"}}`, "org.tier"},
}

// BenchmarkGet reads each document's path with jsonvalue and with gjson,
// side by side in one run.
func BenchmarkGet(b *testing.B) {
	for _, d := range benchDocs {
		want := gjson.Get(d.doc, d.path).Raw
		b.Run(d.name+"/jsonvalue", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if jsonvalue.Get(d.doc, d.path).Raw != want {
					b.Fatal("misread")
				}
			}
		})
		b.Run(d.name+"/gjson", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if gjson.Get(d.doc, d.path).Raw != want {
					b.Fatal("misread")
				}
			}
		})
	}
}
