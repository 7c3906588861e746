package main

import (
	"encoding/json"
	"log"
	"os"
	"strconv"
	"strings"
	"testing"
)

// startEchoT starts the built-in upstream for a test.
func startEchoT(t *testing.T) string {
	t.Helper()
	url, closeEcho, err := startEcho(log.New(os.Stderr, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeEcho)
	return url
}

// x-echo-status sets the status, with the echo as the body; a value
// outside 200-599 is refused with 400.
func TestEchoStatusHeader(t *testing.T) {
	t.Parallel()
	up := startEchoT(t)
	for _, v := range []string{"429", "200", "503", "599"} {
		r := get(t, up+"/x", "", map[string]string{statusHeader: v})
		if want, _ := strconv.Atoi(v); r.status != want || r.echo(t).URI != "/x" {
			t.Errorf("%s %s: status %d, body %q", statusHeader, v, r.status, r.body)
		}
	}
	for _, v := range []string{"100", "199", "600", "abc", "4 29"} {
		r := get(t, up+"/x", "", map[string]string{statusHeader: v})
		if r.status != 400 || !strings.Contains(r.body, statusHeader) || !strings.Contains(r.body, "want a status from 200 to 599") {
			t.Errorf("%s %q: status %d, body %q; want 400 naming the header", statusHeader, v, r.status, r.body)
		}
	}
	// It applies to a chat completion too.
	r := get(t, up+"/v1/chat/completions", `{"messages":[]}`, map[string]string{statusHeader: "500"})
	if u := chatUsageOf(t, r.body); r.status != 500 || u.CompletionTokens != chatDefaultMax {
		t.Errorf("chat with %s 500: status %d, body %q", statusHeader, r.status, r.body)
	}
}

func chatUsageOf(t *testing.T, body string) chatUsage {
	t.Helper()
	var c struct {
		Object  string
		Model   string
		Choices []chatChoice
		Usage   *chatUsage
	}
	if err := json.Unmarshal([]byte(body), &c); err != nil || c.Usage == nil || c.Object != "chat.completion" || len(c.Choices) != 1 {
		t.Fatalf("not a chat completion with usage: %q", body)
	}
	return *c.Usage
}

// A chat completion: prompt_tokens are the words of the messages,
// completion_tokens the max_tokens asked for (16 without), at the
// paths the openai_chat preset reads.
func TestEchoChatCompletion(t *testing.T) {
	t.Parallel()
	up := startEchoT(t)
	for _, tc := range []struct {
		path, body   string
		model        string
		prompt, comp int64
	}{
		{"/v1/chat/completions", `{"model":"gpt-x","messages":[{"role":"user","content":"hello  there\n world"}],"max_tokens":400}`, "gpt-x", 3, 400},
		{"/chat/completions", `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"one two three"}]},{"role":"assistant","content":null}],"max_completion_tokens":7}`, "echo", 5, 7},
		{"/openai/v1/chat/completions", `{"model":"m","messages":[]}`, "m", 0, chatDefaultMax},
		{"/v1/chat/completions", `{"messages":[{"content":"a b"}],"max_tokens":2,"max_completion_tokens":9}`, "echo", 2, 2},
	} {
		r := get(t, up+tc.path, tc.body, nil)
		if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s %s: status %d, content-type %q, body %q", tc.path, tc.body, r.status, r.header.Get("Content-Type"), r.body)
		}
		u := chatUsageOf(t, r.body)
		if u != (chatUsage{tc.prompt, tc.comp, tc.prompt + tc.comp}) {
			t.Errorf("%s: usage %+v; want prompt %d, completion %d", tc.body, u, tc.prompt, tc.comp)
		}
		var c chatCompletion
		json.Unmarshal([]byte(r.body), &c)
		if c.ID != "chatcmpl-echo" || c.Model != tc.model || c.Choices[0].FinishReason != "length" || c.Choices[0].Message.Role != "assistant" ||
			int64(len(strings.Fields(c.Choices[0].Message.Content))) > tc.comp {
			t.Errorf("%s: %q", tc.body, r.body)
		}
	}
	// A GET, or a POST elsewhere, is echoed.
	if r := get(t, up+"/v1/chat/completions", "", nil); r.echo(t).URI != "/v1/chat/completions" {
		t.Errorf("GET: %q", r.body)
	}
	if r := get(t, up+"/v1/chat/completions/x", `{}`, nil); r.echo(t).Body != `{}` {
		t.Errorf("POST elsewhere: %q", r.body)
	}
}

// Streamed: chunks of content, then, with include_usage only, a chunk
// with no choices and the usage, then [DONE].
func TestEchoChatStream(t *testing.T) {
	t.Parallel()
	up := startEchoT(t)
	for _, include := range []bool{true, false} {
		body := `{"model":"m","stream":true,"max_tokens":5,"messages":[{"role":"user","content":"two words"}]` +
			map[bool]string{true: `,"stream_options":{"include_usage":true}}`, false: `}`}[include]
		r := get(t, up+"/v1/chat/completions", body, nil)
		if r.status != 200 || r.header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("include_usage %v: status %d, content-type %q", include, r.status, r.header.Get("Content-Type"))
		}
		events := strings.Split(strings.TrimSuffix(r.body, "\n\n"), "\n\n")
		if len(events) < 4 || events[len(events)-1] != "data: [DONE]" {
			t.Fatalf("include_usage %v: events %q", include, events)
		}
		var text strings.Builder
		var usages []chatUsage
		nulls := 0
		for i, ev := range events[:len(events)-1] {
			var c struct {
				Object  string
				Choices []struct {
					Delta        struct{ Content string }
					FinishReason *string `json:"finish_reason"`
				}
				Usage json.RawMessage
			}
			if !strings.HasPrefix(ev, "data: ") || json.Unmarshal([]byte(ev[len("data: "):]), &c) != nil || c.Object != "chat.completion.chunk" {
				t.Fatalf("include_usage %v: event %d %q", include, i, ev)
			}
			for _, ch := range c.Choices {
				text.WriteString(ch.Delta.Content)
			}
			switch string(c.Usage) {
			case "":
			case "null":
				nulls++
			default:
				var u chatUsage
				json.Unmarshal(c.Usage, &u)
				if len(c.Choices) != 0 || i != len(events)-2 {
					t.Errorf("include_usage %v: usage in event %d of %d, with choices %d", include, i, len(events)-1, len(c.Choices))
				}
				usages = append(usages, u)
			}
		}
		if n := len(strings.Fields(text.String())); n != 5 {
			t.Errorf("include_usage %v: content %q, %d words; want 5 (max_tokens)", include, text.String(), n)
		}
		switch {
		case include && (len(usages) != 1 || usages[0] != chatUsage{2, 5, 7} || nulls != len(events)-2):
			t.Errorf("include_usage: usages %+v, %d null; body %q", usages, nulls, r.body)
		case !include && (len(usages) != 0 || nulls != 0):
			t.Errorf("without include_usage: usages %+v, %d null; body %q", usages, nulls, r.body)
		}
	}
}

// A body that is not JSON, or whose fields do not fit, is refused with
// 400 and an OpenAI-style error naming what was wrong.
func TestEchoChatRefusesBadRequests(t *testing.T) {
	t.Parallel()
	up := startEchoT(t)
	for _, tc := range []struct{ body, want string }{
		{`not json`, "request body: invalid JSON at line 1, column 2"},
		{`{"messages":[`, "line 1, column 14: unexpected end of input"},
		{strings.Repeat("[", 100), "nested deeper than 64"},
		{`{"max_tokens":"many"}`, "max_tokens"},
		{`{"max_tokens":0}`, "max_tokens 0: want 1 to"},
		{`{"max_completion_tokens":-3}`, "max_completion_tokens -3"},
		{`{"messages":[{"content":"ok"},{"content":7}]}`, "messages[1].content: want a string or an array of parts"},
	} {
		r := get(t, up+"/v1/chat/completions", tc.body, nil)
		var e struct {
			Error struct{ Message, Type string }
		}
		if r.status != 400 || json.Unmarshal([]byte(r.body), &e) != nil || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, tc.want) {
			t.Errorf("%.40q: status %d, body %q; want 400 with %q", tc.body, r.status, r.body, tc.want)
		}
	}
	r := get(t, up+"/v1/chat/completions", `{"model":"`+strings.Repeat("m", maxEchoBody)+`"}`, nil)
	if r.status != 413 || !strings.Contains(r.body, "larger than 1048576 bytes") {
		t.Errorf("a body over 1 MiB: status %d, body %.200q", r.status, r.body)
	}
}
