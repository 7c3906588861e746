package filter

import (
	"encoding/binary"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
)

// bodyGPT limits gpt-4o per API key by a match on the body's model, and
// every model per API key by a body key part.
const bodyGPT = `{"redis":{"cluster":"redis"},"rules":[
	{"name":"gpt-4o","match":{"body":[{"path":"model","exact":"gpt-4o"}]},
	 "key":[{"source":"header","name":"x-api-key"}],
	 "limits":[{"algorithm":"sliding_log","limit":1,"window":"1m"}],"max_request_body_bytes":4096},
	{"name":"per-model","key":[{"source":"header","name":"x-api-key"},{"source":"body","path":"model"}],
	 "limits":[{"algorithm":"sliding_log","limit":1,"window":"1m"}],"max_request_body_bytes":4096}]}`

// sendKeyed sends one request with its body as the proxy does, under the
// given API key; it returns the local reply (status 0 when admitted).
func (h *fakeHost) sendKeyed(key string, body []byte) *filtertest.Stream {
	h.t.Helper()
	fs := filtertest.NewStream("192.0.2.7:40000", nil)
	st := h.plugin.NewStream(fs)
	defer st.OnDone()
	st.SetBodyFollows(true)
	st.OnRequestHeaders([][2]string{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "llm"}, {"x-api-key", key}})
	if st.WantsRequestBody() {
		if len(body) > st.RequestBodyLimit() {
			st.OnRequestBodyTooLarge(len(body))
		} else {
			st.OnRequestBody(body)
		}
	}
	h.Pump()
	return fs
}

// utf16LE is s encoded as UTF-16, little-endian, as Python's json reads it.
func utf16LE(s string) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = binary.LittleEndian.AppendUint16(b, u)
	}
	return b
}

// Each body of issue 29's attacks, sent once the API key's gpt-4o limit
// is spent, is read as Python's json.loads reads it: the limit denies it
// (429), or the body is refused (400, 413); none passes. On b8f0dfd the
// filter read the first duplicate and no field of the others, so each
// passed.
func TestBodyAttacksOnSpentLimit(t *testing.T) {
	h := newFakeHost(t, bodyGPT)
	for _, tc := range []struct {
		name, body string
		status     int
		reason     string
	}{
		{"duplicate model", `{"model":"decoy","model":"gpt-4o"}`, 429, ""},
		{"escaped duplicate", `{"model":"decoy","mod\u0065l":"gpt-4o"}`, 429, ""},
		{"BOM", "\xef\xbb\xbf{\"model\":\"gpt-4o\"}", 429, ""},
		{"NaN", `{"model":"gpt-4o","temperature":NaN}`, 429, ""},
		{"Infinity", `{"model":"gpt-4o","max_tokens":Infinity}`, 429, ""},
		{"UTF-16", string(utf16LE(`{"model":"gpt-4o"}`)), 400, "UTF-16 or UTF-32"},
		{"case variant", `{"model":"decoy","MODEL":"gpt-4o"}`, 400, "a key differs from a field's name only in case"},
		{"padding", `{"model":"gpt-4o"}` + strings.Repeat(" ", 4096), 413, "larger than max_request_body_bytes"},
	} {
		key := "k-" + tc.name
		if fs := h.sendKeyed(key, []byte(`{"model":"gpt-4o"}`)); fs.Status != 0 {
			t.Fatalf("%s: the first request got %d %s", tc.name, fs.Status, fs.Body)
		}
		fs := h.sendKeyed(key, []byte(tc.body))
		if fs.Status != tc.status {
			t.Errorf("%s: %d %s; want %d", tc.name, fs.Status, fs.Body, tc.status)
			continue
		}
		if tc.reason != "" {
			want := `{"error":"unreadable_body","rule":"gpt-4o","reason":"` + tc.reason + `"}` + "\n"
			if fs.Body != want {
				t.Errorf("%s: body %q, want %q", tc.name, fs.Body, want)
			}
		}
	}
	if got := h.Counters["ratelimit.request_body.unreadable"]; got != 3 {
		t.Errorf("ratelimit.request_body.unreadable = %d, want 3", got)
	}
}

// A decoy model first in a duplicate gets no counter of its own: the
// request is counted against the model the upstream reads.
func TestDuplicateModelKeysLastValue(t *testing.T) {
	h := newFakeHost(t, bodyGPT)
	if fs := h.sendKeyed("k", []byte(`{"model":"m1"}`)); fs.Status != 0 {
		t.Fatalf("first m1: %d %s", fs.Status, fs.Body)
	}
	for _, decoy := range []string{"d1", "d2"} {
		if fs := h.sendKeyed("k", []byte(`{"model":"`+decoy+`","model":"m1"}`)); fs.Status != 429 {
			t.Fatalf("decoy %s then m1: %d %s; want 429 (m1 is spent)", decoy, fs.Status, fs.Body)
		}
	}
}

// A request without a body is not unreadable: its fields are missing, and
// the rules are skipped as before.
func TestNoBodyIsNotUnreadable(t *testing.T) {
	h := newFakeHost(t, bodyGPT)
	for range 2 {
		if fs := h.sendKeyed("k", nil); fs.Status != 0 {
			t.Fatalf("no body: %d %s", fs.Status, fs.Body)
		}
	}
	if got := h.Counters["ratelimit.request_body.unreadable"]; got != 0 {
		t.Fatalf("unreadable %d", got)
	}
}

// Under on_unreadable_body: missing, a refused body has no fields, as on
// b8f0dfd: the rules are skipped, and the refusal is counted.
func TestUnreadableBodyMissing(t *testing.T) {
	h := newFakeHost(t, strings.ReplaceAll(bodyGPT, `"max_request_body_bytes":4096`, `"max_request_body_bytes":4096,"on_unreadable_body":"missing"`))
	for range 2 {
		if fs := h.sendKeyed("k", utf16LE(`{"model":"gpt-4o"}`)); fs.Status != 0 {
			t.Fatalf("UTF-16 under missing: %d %s; want admitted", fs.Status, fs.Body)
		}
	}
	if got := h.Counters["ratelimit.request_body.unreadable"]; got != 2 {
		t.Fatalf("unreadable %d, want 2", got)
	}
}

// The model a price table refuses is the last of duplicate "model"s: the
// one the upstream serves.
func TestPricedModelIsLastDuplicate(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"spend","key":[{"source":"header","name":"x-api-key"}],
		"limits":[{"algorithm":"sliding_counter","limit":100000000,"window":"1h"}],
		"response_cost":{"usage":"openai_chat","reserve":{"body":"max_tokens","default":100},
		 "price":{"unit":"micro_usd","models":{"gpt-4o":{"input":"2.50","output":"10"}},"default":"refuse"}}}]}`)
	if fs := h.sendKeyed("k", []byte(`{"model":"gpt-4o","max_tokens":10}`)); fs.Status != 0 {
		t.Fatalf("gpt-4o: %d %s", fs.Status, fs.Body)
	}
	if fs := h.sendKeyed("k", []byte(`{"model":"gpt-4o","model":"unlisted","max_tokens":10}`)); fs.Status != 400 || !strings.Contains(fs.Body, `"model":"unlisted"`) {
		t.Fatalf("gpt-4o then unlisted: %d %s; want unknown_model", fs.Status, fs.Body)
	}
}

// A number is read by its value: 1.0, 1e0 and 10e-1 are the 1 every
// upstream parser reads, so match.body's exact "1" holds for each, and
// a key part reads each as 1 (one counter, not one per spelling).
func TestBodyNumberByValue(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[
		{"name":"tier1","match":{"body":[{"path":"tier","exact":"1"}]},"key":[{"source":"header","name":"x-api-key"}],
		 "limits":[{"algorithm":"sliding_log","limit":1,"window":"1m"}]},
		{"name":"per-n","key":[{"source":"body","path":"n"}],
		 "limits":[{"algorithm":"sliding_log","limit":1,"window":"1m"}]}]}`)
	if fs := h.sendKeyed("k", []byte(`{"tier":1}`)); fs.Status != 0 {
		t.Fatalf("tier 1: %d %s", fs.Status, fs.Body)
	}
	for _, n := range []string{"1.0", "1e0", "10e-1", "1.00"} {
		if fs := h.sendKeyed("k", []byte(`{"tier":`+n+`}`)); fs.Status != 429 {
			t.Errorf("tier %s: %d %s; want 429, tier1's spent limit", n, fs.Status, fs.Body)
		}
	}
	if fs := h.sendKeyed("k2", []byte(`{"n":7}`)); fs.Status != 0 {
		t.Fatalf("n 7: %d %s", fs.Status, fs.Body)
	}
	for _, n := range []string{"7.0", "0.7e1", "700e-2"} {
		if fs := h.sendKeyed("k2", []byte(`{"n":`+n+`}`)); fs.Status != 429 {
			t.Errorf("n %s: %d %s; want 429, 7's spent counter", n, fs.Status, fs.Body)
		}
	}
}

func TestAppendNumberText(t *testing.T) {
	for raw, want := range map[string]string{
		"0": "0", "-0": "0", "7": "7", "-7": "-7", "12345678901234567890": "12345678901234567890",
		"7.0": "7", "0.7e1": "7", "-0.0": "0", "1e-400": "0", "0.70": "0.7", "1.5e300": "1.5e+300",
		"1e400": "+Inf", "NaN": "NaN", "Infinity": "+Inf", "-Infinity": "-Inf", "1e21": "1e+21",
	} {
		if got := string(appendNumberText(nil, raw)); got != want {
			t.Errorf("%s: %q, want %q", raw, got, want)
		}
	}
}

// The decision line names the reason; a shadow rule that would deny an
// unreadable body counts it as would_deny and admits the request.
func TestUnreadableBodyToldAndShadowed(t *testing.T) {
	h := newFakeHost(t, bodyGPT)
	if fs := h.sendKeyed("k", []byte(`{"model":`)); fs.Status != 400 || fs.Decision != "rule=gpt-4o decision=denied reason=unreadable_body" {
		t.Fatalf("truncated: %d %s, told %q", fs.Status, fs.Body, fs.Decision)
	}
	h = newFakeHost(t, strings.ReplaceAll(bodyGPT, `"max_request_body_bytes":4096`, `"max_request_body_bytes":4096,"shadow":true`))
	fs := h.sendKeyed("k", []byte(`{"model":`))
	if fs.Status != 0 || fs.Decision != "rule=gpt-4o decision=would_deny reason=unreadable_body" {
		t.Fatalf("shadow: %d %s, told %q; want admitted, would_deny", fs.Status, fs.Body, fs.Decision)
	}
	if got := h.Counters["ratelimit.rule.gpt-4o.would_deny"]; got != 1 {
		t.Fatalf("gpt-4o would_deny %d, want 1", got)
	}
}
