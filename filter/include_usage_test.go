package filter

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

// A chat stream without include_usage is asked for it: content-length goes
// at the headers, and the body gets stream_options.include_usage. On
// b8f0dfd neither changed, and the stream came without usage.
func TestChatStreamAsksForUsage(t *testing.T) {
	h := newFakeHost(t, tokenRule(100000, ""))
	for _, c := range []struct{ body, want string }{
		{`{"model":"gpt-4o","stream":true}`, `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true}}`},
		{`{"stream":true,"stream_options":{}} `, `{"stream":true,"stream_options":{"include_usage":true}} `},
		{`{"stream":true,"stream_options":{"x":1}}`, `{"stream":true,"stream_options":{"include_usage":true,"x":1}}`},
		{`{"stream":true,"stream_options":{"include_usage":false}}`, `{"stream":true,"stream_options":{"include_usage":true}}`},
		{`{"stream":true,"stream_options":null}`, `{"stream":true,"stream_options":{"include_usage":true}}`},
		{`{"stream":true,"stream_options":{"include_usage":true}}`, ""},
		{`{"stream":false}`, ""},
		{`{"model":"gpt-4o"}`, ""},
		// Read as the upstream reads them: the last of duplicate keys.
		{`{"stream":true,"stream_options":{"include_usage":true},"stream_options":{"include_usage":false}}`,
			`{"stream":true,"stream_options":{"include_usage":true},"stream_options":{"include_usage":false},"stream_options":{"include_usage":false,"include_usage":true}}`},
		{`{"stream":true,"stream_options":{"include_usage":true,"include_usage":false}}`, `{"stream":true,"stream_options":{"include_usage":true,"include_usage":false,"include_usage":true}}`},
		{`{"stream":false,"stream":true}`, `{"stream":false,"stream":true,"stream_options":{"include_usage":true}}`},
		{`{"stream":true,"stream":false}`, ""},
	} {
		r := h.llm(llmCall{headers: []string{"x-api-key=k", "content-length=" + strconv.Itoa(len(c.body))}, body: c.body, resp: chatJSON("gpt-4o", 1, 1)})
		if r.status != 200 {
			t.Fatalf("%s: %d %s", c.body, r.status, r.body)
		}
		if r.fs.RequestBody != c.want {
			t.Errorf("%s: body %q, want %q", c.body, r.fs.RequestBody, c.want)
		}
		if len(r.fs.RemovedRequest) != 1 || r.fs.RemovedRequest[0] != "content-length" {
			t.Errorf("%s: removed %v, want content-length", c.body, r.fs.RemovedRequest)
		}
	}
}

// FuzzIncludeUsage: whatever the body, a change keeps it JSON, sets
// include_usage as encoding/json reads it (the last duplicate), and keeps
// the other top-level fields.
func FuzzIncludeUsage(f *testing.F) {
	for _, s := range []string{`{"stream":true}`, `{"stream":true,"stream_options":{"a":[1,{"b":2}]}}`, `{"stream":true,"stream_options":"x"}`,
		`{"stream":true,"stream_options":{"include_usage":0},"model":"m"}`, ` {"stream" : true , "n":{"stream_options":1}} `} {
		f.Add([]byte(s))
	}
	for _, s := range []string{`{"stream":true,"stream_options":{"include_usage":true},"stream_options":{}}`, `{"stream":true,"stream_options":{"include_usage":true,"include_usage":0}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if text, why := jsonbound.ReadBody(body); why != 0 || len(text) != len(body) || !json.Valid(body) {
			return
		}
		out, ok, _ := withIncludeUsage(body)
		if !ok {
			return
		}
		var m map[string]any // as encoding/json reads it: the last duplicate
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("%q became %q: %v", body, out, err)
		}
		if so, _ := m["stream_options"].(map[string]any); so["include_usage"] != true {
			t.Fatalf("%q became %q: include_usage not true as encoding/json reads it", body, out)
		}
		if a, b := jsonvalue.GetBytes(body, "model").Raw, jsonvalue.GetBytes(out, "model").Raw; a != b {
			t.Fatalf("%q became %q: model %s, was %s", body, out, b, a)
		}
	})
}
