package e2e

import (
	"encoding/binary"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// postReply sends body and returns the status and the reply's body.
func postReply(t *testing.T, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-api-key", "k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Through both builds, a body is read as the upstream reads it: a decoy
// first in a duplicate "model" is counted as the last model, the one the
// upstream serves; a body padded past max_request_body_bytes is denied
// with 413, and one in UTF-16 with 400, each saying why. Neither reaches
// the upstream. On b8f0dfd all three passed the spent limit.
func TestBodyReadAsUpstream(t *testing.T) {
	for _, kind := range moduleKinds {
		t.Run(kind, func(t *testing.T) {
			rec, up := newBodyRecorder(t)
			conf := llmConfig(redistest.Prefix(t), `{"name":"per-model","key":[{"source":"header","name":"x-api-key"},{"source":"body","path":"model"}],`+
				`"limits":[{"algorithm":"sliding_log","limit":1,"window":"1m"}],"max_request_body_bytes":256}`)
			h := startBuild(t, kind, wasmhost.Config{Upstream: up}, conf, server.Addr).h
			url := h.URL() + "/v1/chat/completions"
			first := `{"model":"model-a","messages":[]}`
			if st, body := postReply(t, url, first); st != 200 {
				t.Fatalf("model-a: %d %s", st, body)
			}
			if st, body := postReply(t, url, `{"model":"decoy","model":"model-a","messages":[]}`); st != 429 {
				t.Fatalf("decoy then model-a: %d %s; want 429 (model-a is spent)", st, body)
			}
			padded := `{"model":"model-a"}` + strings.Repeat(" ", 300)
			st, body := postReply(t, url, padded)
			if want := `{"error":"unreadable_body","rule":"per-model","reason":"larger than max_request_body_bytes"}` + "\n"; st != 413 || body != want {
				t.Fatalf("padded past 256 bytes: %d %q; want 413 %q", st, body, want)
			}
			wide := string(utf16LE(`{"model":"model-a"}`))
			st, body = postReply(t, url, wide)
			if want := `{"error":"unreadable_body","rule":"per-model","reason":"UTF-16 or UTF-32"}` + "\n"; st != 400 || body != want {
				t.Fatalf("UTF-16: %d %q; want 400 %q", st, body, want)
			}
			if got := rec.received(); len(got) != 1 || got[0] != first {
				t.Fatalf("upstream received %q; want the first body only", got)
			}
		})
	}
}

// utf16LE is s encoded as UTF-16, little-endian.
func utf16LE(s string) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = binary.LittleEndian.AppendUint16(b, u)
	}
	return b
}
