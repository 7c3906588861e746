package filter

import (
	"fmt"
	"strings"
	"testing"
)

// tokenRule is a token budget of limit an hour without a price, reserving
// the body's max_tokens (100 by default), with extra response_cost fields.
func tokenRule(limit int, extra string) string {
	return fmt.Sprintf(`{"redis":{"cluster":"redis"},"rules":[{"name":"tpm","key":[{"source":"header","name":"x-api-key"}],
		"limits":[{"algorithm":"sliding_log","limit":%d,"window":"1h"}],
		"response_cost":{"usage":"openai_chat","reserve":{"body":"max_tokens","default":100}%s}}]}`, limit, extra)
}

// chatBody is a chat request of n bytes asking for maxTokens, streamed
// without stream_options.include_usage.
func chatBody(n, maxTokens int) string {
	head := fmt.Sprintf(`{"model":"gpt-4o","max_tokens":%d,"stream":true,"messages":[{"role":"user","content":"`, maxTokens)
	return head + strings.Repeat("w", n-len(head)-len(`"}]}`)) + `"}]}`
}

// noUsageStream is an OpenAI stream without its usage chunk.
const noUsageStream = "data: {\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\",\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n"

// A token rule without a price reserves the request's input tokens too:
// 400 bytes are 100 tokens, besides max_tokens 10. On b8f0dfd it reserved
// 10.
func TestTokenRuleReservesInputTokens(t *testing.T) {
	h := newFakeHost(t, tokenRule(1000, ""))
	r := h.llm(llmCall{headers: []string{"x-api-key=k"}, body: chatBody(400, 10), resp: chatJSON("gpt-4o", 3, 4)})
	if r.status != 200 || r.ratelimit != `"tpm";r=890;t=3600` {
		t.Fatalf("%d %q; want r=890: 10 output and 100 input tokens reserved", r.status, r.ratelimit)
	}
	if got := h.logCount("{tpm|k}:0"); got != 7 {
		t.Errorf("charged %d, want the 7 the usage reports", got)
	}
}

// A stream that carries no usage, and one cut short, are charged the
// estimate by default: the output tokens reserved and one input token per
// byte of the request (400 + 10). "reserved" keeps the old behaviour. On
// b8f0dfd both were charged max_tokens alone, 10.
func TestMissingUsageChargesTheEstimate(t *testing.T) {
	for _, c := range []struct {
		name, extra string
		reset       bool
		want        int64
	}{
		{"missing", "", false, 410},
		{"reset", "", true, 410},
		{"missing/reserved", `,"on_missing":"reserved"`, false, 110},
		{"missing/deflate", "", false, 410},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newFakeHost(t, tokenRule(1000, c.extra))
			resp, enc := noUsageStream, ""
			if c.name == "missing/deflate" { // an upstream that ignored the narrowed Accept-Encoding
				resp, enc = "\x78\x9c binary", "deflate"
			}
			r := h.llm(llmCall{headers: []string{"x-api-key=k"}, body: chatBody(400, 10), resp: resp, sse: true, enc: enc, reset: c.reset})
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if got := h.logCount("{tpm|k}:0"); got != c.want {
				t.Errorf("charged %d, want %d", got, c.want)
			}
		})
	}
}

// The case: 20 streamed requests without include_usage against a
// budget of 1,000 tokens, each asking for 1 token. A 3,000-word prompt
// (18,000 bytes, 4,500 input tokens reserved) never fits; a 3,000-byte one
// fits once, is charged 3,001, and the budget is spent. On b8f0dfd all 20
// passed, charged 1 each.
func TestStreamsWithoutUsageCannotPassABudget(t *testing.T) {
	for _, c := range []struct {
		bytes, passes int
	}{{18_000, 0}, {3_000, 1}} {
		t.Run(fmt.Sprint(c.bytes), func(t *testing.T) {
			h := newFakeHost(t, tokenRule(1000, ""))
			passed := 0
			for range 20 {
				if r := h.llm(llmCall{headers: []string{"x-api-key=k"}, body: chatBody(c.bytes, 1), resp: noUsageStream, sse: true}); r.status == 200 {
					passed++
				}
			}
			if passed != c.passes {
				t.Errorf("%d of 20 passed, want %d", passed, c.passes)
			}
		})
	}
}

// The filter narrows Accept-Encoding to what it reads (gzip, identity),
// in the request headers' callback, for a request a usage rule matches:
// identity is set, not the header removed, since without it any coding is
// acceptable. On b8f0dfd it left it alone.
func TestAcceptEncodingNarrowed(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"tpm","match":{"path":"/v1/chat/completions"},"key":[{"source":"header","name":"x-api-key"}],
		"limits":[{"algorithm":"sliding_log","limit":1000,"window":"1h"}],"response_cost":{"usage":"openai_chat","reserve":10}}]}`)
	for _, c := range []struct {
		path, accept, set string
	}{
		{"/v1/chat/completions", "gzip, deflate, br", "gzip"},
		{"/v1/chat/completions", "deflate", "identity"},
		{"/v1/chat/completions", "br;q=1, gzip;q=0", "identity"},
		{"/v1/chat/completions", "", "identity"}, // absent: any coding would do
		{"/v1/chat/completions", "*", "gzip"},
		{"/v1/chat/completions", "gzip", ""},
		{"/other", "deflate", ""}, // no usage rule matches
	} {
		args := []string{":path=" + c.path, "x-api-key=k"}
		if c.accept != "" {
			args = append(args, "accept-encoding="+c.accept)
		}
		_, fs := h.sendStream(args...)
		if fs.SetRequest["accept-encoding"] != c.set || len(fs.RemovedRequest) != 0 {
			t.Errorf("%s %q: set %q, removed %v; want set %q, nothing removed", c.path, c.accept, fs.SetRequest["accept-encoding"], fs.RemovedRequest, c.set)
		}
	}
}

func TestAcceptsGzip(t *testing.T) {
	for v, want := range map[string]bool{
		"gzip": true, "GZIP": true, "x-gzip": true, "deflate, gzip;q=0.5": true, "gzip;q=1.000": true, "*;q=0.1": true,
		"": false, "deflate": false, "br, zstd": false, "gzip;q=0": false, "gzip; q=0.000": false, "*;q=0, deflate": false,
		"gzip;q=0, *": false, "gzip;q=junk": false, "identity": false,
	} {
		if got := acceptsGzip(v); got != want {
			t.Errorf("acceptsGzip(%q) = %t, want %t", v, got, want)
		}
	}
}

// FuzzAcceptsGzip: any header value is read in bounded work, and a value
// that names gzip first, with no q, is accepted.
func FuzzAcceptsGzip(f *testing.F) {
	for _, s := range []string{"gzip, deflate, br", "*;q=0.1", "gzip;q=0", "br;q=1, gzip;q=0.001", strings.Repeat("a,", 100) + "gzip"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		acceptsGzip(v)
		if !acceptsGzip("gzip," + v) {
			t.Fatalf("gzip,%q not accepted", v)
		}
	})
}
