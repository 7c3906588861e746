package usage

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// Real-looking bodies, after the providers' API references.
const (
	usageChatJSON = `{
  "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
  "object": "chat.completion",
  "created": 1741569952,
  "model": "gpt-4.1-2025-04-14",
  "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello! How can I assist you today?", "refusal": null, "annotations": []}, "logprobs": null, "finish_reason": "stop"}],
  "usage": {
    "prompt_tokens": 19, "completion_tokens": 10, "total_tokens": 29,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
  },
  "service_tier": "default"
}`
	usageChatChunk = `data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{"content":"%s"},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n"
	usageChatSSE   = `data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n" +
		`data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n" +
		`data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","system_fingerprint":"fp_44709d6fcb","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}` + "\n\n" +
		usageChatUsage + "data: [DONE]\n\n"
	usageChatUsage = `data: {"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","system_fingerprint":"fp_44709d6fcb","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}` + "\n\n"

	usageResponsesJSON = `{"id":"resp_67ccd3a9da748190baa7f1570fe91ac604becb25c45c1d41","object":"response","created_at":1741476777,"status":"completed","error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":"gpt-4o-2024-08-06","output":[{"type":"message","id":"msg_67ccd3acc8d48190a77525dc6de64b4104becb25c45c1d41","status":"completed","role":"assistant","content":[{"type":"output_text","text":"In a peaceful grove beneath a silver moon...","annotations":[]}]}],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"store":true,"temperature":1.0,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":{"input_tokens":328,"input_tokens_details":{"cached_tokens":0},"output_tokens":52,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":380},"user":null,"metadata":{}}`
	usageResponsesSSE  = "event: response.created\n" +
		`data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654","object":"response","created_at":1741290958,"status":"in_progress","error":null,"model":"gpt-4.1-2025-04-14","output":[],"usage":null,"metadata":{}}}` + "\n\n" +
		"event: response.in_progress\n" +
		`data: {"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654","object":"response","status":"in_progress","output":[],"usage":null}}` + "\n\n" +
		"event: response.output_item.added\n" +
		`data: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","type":"message","status":"in_progress","role":"assistant","content":[]}}` + "\n\n" +
		"event: response.output_text.delta\n" +
		`data: {"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","output_index":0,"content_index":0,"delta":"Hi","logprobs":[]}` + "\n\n" +
		"event: response.output_text.done\n" +
		`data: {"type":"response.output_text.done","sequence_number":4,"item_id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","output_index":0,"content_index":0,"text":"Hi","logprobs":[]}` + "\n\n" +
		"event: response.completed\n" +
		`data: {"type":"response.completed","sequence_number":5,"response":{"id":"resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654","object":"response","created_at":1741290958,"status":"completed","error":null,"model":"gpt-4.1-2025-04-14","output":[{"id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi","annotations":[]}]}],"usage":{"input_tokens":37,"input_tokens_details":{"cached_tokens":0},"output_tokens":11,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":48},"user":null,"metadata":{}}}` + "\n\n"

	usageAnthropicJSON = `{"id":"msg_013Zva2CMHLNnXjNJJKqJ2EF","type":"message","role":"assistant","model":"claude-sonnet-4-20250514","content":[{"type":"text","text":"Hi! My name is Claude."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":2095,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":503}}`
	usageAnthropicSSE  = "event: message_start\n" +
		`data: {"type":"message_start","message":{"id":"msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-20250514","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}` + "\n\n" +
		"event: content_block_start\n" +
		`data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
		"event: ping\n" + `data: {"type": "ping"}` + "\n\n" +
		"event: content_block_delta\n" +
		`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}` + "\n\n" +
		"event: content_block_delta\n" +
		`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"!"}}` + "\n\n" +
		"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":0}` + "\n\n" +
		"event: message_delta\n" +
		`data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":7}}` + "\n\n" +
		"event: message_delta\n" +
		`data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}` + "\n\n" +
		"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n"
)

// usageScan runs one response through u, in these chunks.
func usageScan(u *Scanner, f *Fields, sse bool, maxBytes int, chunks ...[]byte) (int64, bool) {
	u.Start(f, sse, maxBytes)
	for _, c := range chunks {
		u.Write(c)
	}
	return u.Finish()
}

// usageCheckChunkings checks body whole, byte by byte, and split at every
// position, reusing one scanner.
func usageCheckChunkings(t *testing.T, f *Fields, sse bool, maxBytes int, body string, want int64, wantFound bool) {
	t.Helper()
	var u Scanner
	b := []byte(body)
	check := func(how string, chunks ...[]byte) {
		t.Helper()
		if got, found := usageScan(&u, f, sse, maxBytes, chunks...); got != want || found != wantFound {
			t.Fatalf("%s: got %d, %v; want %d, %v", how, got, found, want, wantFound)
		}
	}
	check("whole", b)
	bytewise := make([][]byte, len(b))
	for i := range b {
		bytewise[i] = b[i : i+1]
	}
	check("byte by byte", bytewise...)
	for i := 0; i <= len(b); i++ {
		check("split at "+strconv.Itoa(i), b[:i], nil, b[i:])
	}
}

func usagePreset(name string) *Fields {
	f, _ := Preset(name)
	return f
}

func TestUsagePresets(t *testing.T) {
	noUsage := strings.ReplaceAll(usageChatSSE, usageChatUsage, "")
	for _, tc := range []struct {
		name, preset string
		sse          bool
		body         string
		want         int64
		found        bool
	}{
		{"openai chat JSON", "openai_chat", false, usageChatJSON, 29, true},
		{"openai chat SSE", "openai_chat", true, usageChatSSE, 21, true},
		{"openai chat SSE without include_usage", "openai_chat", true, noUsage, 0, false},
		{"openai responses JSON", "openai_responses", false, usageResponsesJSON, 380, true},
		{"openai responses SSE", "openai_responses", true, usageResponsesSSE, 48, true},
		{"anthropic JSON", "anthropic", false, usageAnthropicJSON, 2598, true},
		{"anthropic SSE", "anthropic", true, usageAnthropicSSE, 40, true},
		{"anthropic SSE with CRLF", "anthropic", true, strings.ReplaceAll(usageAnthropicSSE, "\n", "\r\n"), 40, true},
		{"anthropic SSE with CR", "anthropic", true, strings.ReplaceAll(usageAnthropicSSE, "\n", "\r"), 40, true},
		{"SSE read as JSON", "openai_chat", false, usageChatSSE, 0, false},
		{"JSON read as SSE", "openai_chat", true, usageChatJSON, 0, false},
		{"empty body", "anthropic", false, "", 0, false},
		{"stream cut before the blank line", "openai_chat", true, strings.TrimSuffix(noUsage, "\n\n") + "\n" + strings.TrimSuffix(usageChatUsage, "\n"), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			usageCheckChunkings(t, usagePreset(tc.preset), tc.sse, 1<<20, tc.body, tc.want, tc.found)
		})
	}
}

func TestUsageSSE(t *testing.T) {
	n := Paths([]string{"n"})
	two := Paths([]string{"u.a", "u.b"})
	// manyLines is one event of valid JSON over k data lines of 1 KiB.
	manyLines := func(k int) string {
		return "data: {\"n\":9\n" + strings.Repeat("data: ,\"p\":\""+strings.Repeat("x", 1017)+"\"\n", k) + "data: }\n\n"
	}
	// atCap is an event whose data, with its '\n', is maxEvent+over bytes.
	atCap := func(over int) string {
		return `data: {"n":4,"p":"` + strings.Repeat("x", maxEvent-15+over) + "\"}\n\n"
	}
	big := `{"pad":"` + strings.Repeat("x", maxEvent) + `","n":100}`
	for _, tc := range []struct {
		name  string
		f     *Fields
		body  string
		want  int64
		found bool
	}{
		{"plain", n, "data: {\"n\":5}\n\n", 5, true},
		{"no space", n, "data:{\"n\":5}\n\n", 5, true},
		{"two spaces", n, "data:  {\"n\":5}\n\n", 5, true},
		{"CRLF", n, "data: {\"n\":5}\r\n\r\n", 5, true},
		{"CR", n, "data: {\"n\":5}\r\r", 5, true},
		{"LF then CR", n, "data: {\"n\":5}\n\r", 5, true},
		{"BOM", n, "\xEF\xBB\xBFdata: {\"n\":5}\n\n", 5, true},
		{"BOM past the first line", n, "\n\xEF\xBB\xBFdata: {\"n\":5}\n\n", 0, false},
		{"comments and other fields", n, ": keep-alive\nevent: x\nid: 7\nretry: 10\ndata: {\"n\":5}\n: more\n\n", 5, true},
		{"comment alone is no blank line", n, "data: {\"n\":5}\n:\n", 0, false},
		{"multi-line data", n, "data: {\"u\":1,\ndata:\ndata: \"n\": 6}\n\n", 6, true},
		{"multi-line data with CRLF", n, "data: {\"u\":1,\r\ndata: \"n\": 6}\r\n\r\n", 6, true},
		{"multi-line data with CR", n, "data: {\"u\":1,\rdata: \"n\": 6}\r\r", 6, true},
		{"data without colon", n, "data: {\"n\":\ndata\ndata: 7}\n\n", 7, true},
		{"data is case-sensitive", n, "Data: {\"n\":5}\n\n", 0, false},
		{"longer field name", n, "datax: {\"n\":5}\n\n", 0, false},
		{"field name with a space", n, "data : {\"n\":5}\n\n", 0, false},
		{"unterminated last event", n, "data: {\"n\":5}\n", 0, false},
		{"unterminated last line", n, "data: {\"n\":5}", 0, false},
		{"last event counts", n, "data: {\"n\":3}\n\ndata: {\"n\":5}\n\n", 5, true},
		{"null does not replace", n, "data: {\"n\":5}\n\ndata: {\"n\":null}\n\n", 5, true},
		{"an invalid value makes the usage missing", n, "data: {\"n\":5}\n\ndata: {\"n\":-1}\n\ndata: {\"n\":6}\n\n", 0, false},
		{"a smaller value does not replace", n, "data: {\"n\":5}\n\ndata: {\"n\":3}\n\n", 5, true},
		{"per path", two, "data: {\"u\":{\"a\":3}}\n\ndata: {\"u\":{\"b\":4}}\n\ndata: {\"u\":{\"a\":5}}\n\n", 9, true},
		{"DONE and non-JSON", n, "data: [DONE]\n\ndata: n=5\n\ndata: {\"n\":5} x\n\n", 0, false},
		{"invalid JSON", n, "data: {\"n\":5\n\n", 0, false},
		{"escaped key is not seen", n, "data: {\"\\u006e\":5}\n\n", 0, false},
		{"oversized event skipped, later ones count", n, "data: " + big + "\n\ndata: {\"n\":3}\n\n", 3, true},
		{"oversized event does not replace", n, "data: {\"n\":3}\n\ndata: " + big + "\n\n", 3, true},
		{"data at the cap", n, atCap(0), 4, true},
		{"data a byte over the cap", n, atCap(1), 0, false},
		{"many lines under the cap", n, manyLines(maxEvent/1024 - 1), 9, true},
		{"many lines over the cap", n, manyLines(maxEvent/1024 + 1), 0, false},
		{"events ending in blank data", n, "data:\n\ndata\n\n\n\n", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.body) > 1000 { // every split would take too long
				var u Scanner
				b := []byte(tc.body)
				for _, step := range []int{1, 7, 4096, len(b)} {
					var chunks [][]byte
					for i := 0; i < len(b); i += step {
						chunks = append(chunks, b[i:min(i+step, len(b))])
					}
					if got, found := usageScan(&u, tc.f, true, 0, chunks...); got != tc.want || found != tc.found {
						t.Fatalf("chunks of %d: got %d, %v; want %d, %v", step, got, found, tc.want, tc.found)
					}
				}
				return
			}
			usageCheckChunkings(t, tc.f, true, 0, tc.body, tc.want, tc.found)
		})
	}
}

// The data lines of an event, as held before the blank line ends it.
func TestUsageSSEData(t *testing.T) {
	f := Paths([]string{"n"})
	for body, want := range map[string]string{
		"data: a\ndata\ndata:b\r\ndata:  c\r":     "a\n\nb\n c\n",
		"\xEF\xBB\xBFdata\nevent: data\n: data\n": "\n",
		"data:\ndatum: x\nDATA: y\ndat\n":         "\n",
		"data: a\n\ndata: b\ndata: c":             "b\nc", // c's line is not ended yet
	} {
		var u Scanner
		for i := 0; i <= len(body); i++ {
			u.Start(f, true, 0)
			u.Write([]byte(body[:i]))
			u.Write([]byte(body[i:]))
			if string(u.buf) != want {
				t.Fatalf("%q split at %d: data %q, want %q", body, i, u.buf, want)
			}
		}
	}
}

func TestUsageNumbers(t *testing.T) {
	f := Paths([]string{"a", "b"})
	for _, tc := range []struct {
		body  string
		want  int64
		found bool
	}{
		{`{"a":1,"b":2}`, 3, true},
		{`{"a":0}`, 0, true},
		{`{"a":-1,"b":2}`, 0, false}, // one bad field: the whole usage is missing
		{`{"a":-5,"b":2}`, 0, false},
		{`{"a":1.5,"b":2}`, 0, false},
		{`{"a":1e308,"b":2}`, 0, false},
		{`{"a":"5","b":2}`, 0, false},
		{`{"a":true,"b":2}`, 0, false},
		{`{"a":{"x":1},"b":[1]}`, 0, false},
		{`{"a":9223372036854775808,"b":2}`, 0, false},
		{`{"a":null,"b":2}`, 2, true}, // null is absent
		{`{"a":null,"b":null}`, 0, false},
		{`{"a":2.0,"b":1e2}`, 102, true}, // exact integers, however written
		{`{"a":1000e-1,"b":0.5e1}`, 105, true},
		{`{"a":-0,"b":-0.0e5}`, 0, true},
		{`{"a":1099511627776}`, 1 << 40, true},
		{`{"a":1099511627777}`, 0, false},
		{`{"a":1099511627776,"b":1099511627776}`, 1 << 41, true},
		{`{"a":99999999999999999999}`, 0, false},
		{`{}`, 0, false},
		{`{"a":1,"b":2`, 0, false}, // truncated
	} {
		if got, found := usageScan(new(Scanner), f, false, 1<<10, []byte(tc.body)); got != tc.want || found != tc.found {
			t.Errorf("JSON %s: got %d, %v; want %d, %v", tc.body, got, found, tc.want, tc.found)
		}
		sse := "data: " + tc.body + "\n\n"
		if got, found := usageScan(new(Scanner), f, true, 0, []byte(sse)); got != tc.want || found != tc.found {
			t.Errorf("SSE %s: got %d, %v; want %d, %v", tc.body, got, found, tc.want, tc.found)
		}
	}
	if addCapped(math.MaxInt64-1, 1<<53) != math.MaxInt64 || addCapped(1, 2) != 3 {
		t.Error("addCapped does not saturate")
	}
}

func TestUsageJSONMaxBytes(t *testing.T) {
	f := usagePreset("openai_chat")
	usageCheckChunkings(t, f, false, len(usageChatJSON), usageChatJSON, 29, true)
	usageCheckChunkings(t, f, false, len(usageChatJSON)-1, usageChatJSON, 0, false)
	usageCheckChunkings(t, f, false, 0, usageChatJSON, 0, false)
	var u Scanner // a body past the cap, then a small one: reset
	usageScan(&u, f, false, 10, []byte(usageChatJSON))
	if got, found := usageScan(&u, f, false, 1<<20, []byte(usageChatJSON)); got != 29 || !found {
		t.Fatalf("after a body over the cap: got %d, %v", got, found)
	}
	if got, found := usageScan(&u, nil, true, 0, []byte(usageChatSSE)); found || got != 0 {
		t.Fatal("no fields found something")
	}
}

func TestUsageNeedles(t *testing.T) {
	for path, want := range map[string]string{
		"usage.prompt_tokens": "prompt_tokens", "n": "n", "a.0": "", "a.b-c": "b-c",
		`a\.b`: "b", "a.*": "", "a.b?": "", "": "", "a.": "", "a.@this": "",
	} {
		if got := needleOf(path); got != want {
			t.Errorf("needleOf(%q) = %q, want %q", path, got, want)
		}
	}
	for _, tc := range []struct {
		needles []string
		want    string
	}{
		{[]string{"prompt_tokens", "completion_tokens"}, "_tokens"},
		{[]string{"input_tokens", "output_tokens"}, "put_tokens"},
		{[]string{"input_tokens"}, ""},
		{[]string{"input_tokens", ""}, ""},
		{[]string{"", "input_tokens"}, ""},
		{[]string{"ab", "cb"}, ""},
	} {
		if got := gateOf(tc.needles); got != tc.want {
			t.Errorf("gateOf(%q) = %q, want %q", tc.needles, got, tc.want)
		}
	}
}

// Steady state: a reused scanner allocates nothing, per chunk or event.
func TestUsageAllocs(t *testing.T) {
	for _, tc := range []struct {
		name string
		sse  bool
		body []byte
	}{
		{"openai_chat", true, usageChatStream(64 << 10)},
		{"anthropic", true, []byte(strings.Repeat(usageAnthropicSSE, 20))},
		{"openai_responses", true, []byte(strings.Repeat(usageResponsesSSE, 20))},
		{"openai_chat", false, []byte(usageChatJSON)},
		{"anthropic", false, []byte(usageAnthropicSplitJSON)},
		{"anthropic", true, []byte(strings.Repeat(usageAnthropicDownSSE, 20))},
	} {
		f := usagePreset(tc.name)
		chunks := usageChunks(tc.body, 4096)
		var u Scanner
		usageScan(&u, f, tc.sse, 1<<20, chunks...)
		allocs := testing.AllocsPerRun(20, func() {
			if _, found := usageScan(&u, f, tc.sse, 1<<20, chunks...); !found {
				t.Fatal("usage not found")
			}
		})
		if allocs != 0 {
			t.Errorf("%s (sse %v): %v allocations per stream of %d chunks", tc.name, tc.sse, allocs, len(chunks))
		}
	}
}
