package jsonbound

import (
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

// benchBody is a Chat Completions request of about 600 bytes.
const benchBody = `{"model":"gpt-4o","max_tokens":400,"temperature":0.2,"user":"alice","metadata":{"team":"search"},
"messages":[{"role":"system","content":"You are a helpful assistant that answers briefly and cites sources."},
{"role":"user","content":"Summarise the attached changelog for the release notes, in three bullet points, and name the breaking changes first. Keep each bullet under twenty words."}],
"stream":false,"stream_options":null,"tools":[{"type":"function","function":{"name":"search","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}}]}`

// BenchmarkBodyRead reads model and metadata.team from benchBody: as the
// filter does (ReadBody, then Lookup, the last duplicate: "upstream"), and
// as it did on b8f0dfd (Valid, then gjson's Get, the first: "first"; now
// jsonvalue.Get, which reads as gjson's did).
func BenchmarkBodyRead(b *testing.B) {
	body := []byte(benchBody)
	b.Run("upstream", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			text, why := ReadBody(body)
			if why != 0 {
				b.Fatal(why)
			}
			s := string(text) // the filter reads the bytes in place
			if m, _ := Lookup(s, "model"); m != `"gpt-4o"` {
				b.Fatal(m)
			}
			if t, _ := Lookup(s, "metadata.team"); t != `"search"` {
				b.Fatal(t)
			}
		}
	})
	b.Run("first", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !Valid(body) {
				b.Fatal("invalid")
			}
			s := string(body)
			if jsonvalue.Get(s, "model").Str != "gpt-4o" || jsonvalue.Get(s, "metadata.team").Str != "search" {
				b.Fatal("misread")
			}
		}
	})
}
