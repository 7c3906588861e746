package usage

import (
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/price"
)

// usageTokens scans body whole, then byte by byte, and checks both give
// the same tokens and model.
func usageTokens(t *testing.T, preset string, sse bool, body string) (price.Tokens, string, int64) {
	t.Helper()
	f := usagePreset(preset)
	var u Scanner
	total, found := usageScan(&u, f, sse, 1<<20, []byte(body))
	if !found {
		t.Fatalf("%s: no usage", preset)
	}
	tk, model := u.Tokens()
	model = strings.Clone(model)
	var bytewise [][]byte
	for i := range len(body) {
		bytewise = append(bytewise, []byte(body[i:i+1]))
	}
	var v Scanner
	total2, _ := usageScan(&v, f, sse, 1<<20, bytewise...)
	tk2, model2 := v.Tokens()
	if total2 != total || tk2 != tk || model2 != model {
		t.Fatalf("%s: byte by byte %d %v %q; whole %d %v %q", preset, total2, tk2, model2, total, tk, model)
	}
	return tk, model, total
}

// Each preset's kinds, disjoint: OpenAI's cached tokens come out of its
// input count and its reasoning tokens out of its output count;
// Anthropic's counts are apart already.
func TestUsageTokensPerKind(t *testing.T) {
	chat := strings.NewReplacer(`"cached_tokens": 0`, `"cached_tokens": 7`, `"reasoning_tokens": 0`, `"reasoning_tokens": 4`).Replace(usageChatJSON)
	chatSSE := strings.NewReplacer(`"cached_tokens":0`, `"cached_tokens":3`, `"reasoning_tokens":0`, `"reasoning_tokens":5`).Replace(usageChatSSE)
	resp := strings.NewReplacer(`"cached_tokens":0`, `"cached_tokens":28`, `"reasoning_tokens":0`, `"reasoning_tokens":50`).Replace(usageResponsesJSON)
	respSSE := strings.NewReplacer(`"cached_tokens":0`, `"cached_tokens":30`, `"reasoning_tokens":0`, `"reasoning_tokens":1`).Replace(usageResponsesSSE)
	claude := strings.NewReplacer(`"cache_creation_input_tokens":0`, `"cache_creation_input_tokens":100`, `"cache_read_input_tokens":0`, `"cache_read_input_tokens":900`).Replace(usageAnthropicJSON)
	for _, tc := range []struct {
		name, preset string
		sse          bool
		body         string
		want         price.Tokens
		model        string
		total        int64
	}{
		{"chat JSON", "openai_chat", false, chat, price.Tokens{price.Input: 12, price.Cached: 7, price.Output: 6, price.Reasoning: 4}, "gpt-4.1-2025-04-14", 29},
		{"chat SSE", "openai_chat", true, chatSSE, price.Tokens{price.Input: 6, price.Cached: 3, price.Output: 7, price.Reasoning: 5}, "gpt-4o-mini", 21},
		{"responses JSON", "openai_responses", false, resp, price.Tokens{price.Input: 300, price.Cached: 28, price.Output: 2, price.Reasoning: 50}, "gpt-4o-2024-08-06", 380},
		{"responses SSE", "openai_responses", true, respSSE, price.Tokens{price.Input: 7, price.Cached: 30, price.Output: 10, price.Reasoning: 1}, "gpt-4.1-2025-04-14", 48},
		{"anthropic JSON", "anthropic", false, claude, price.Tokens{price.Input: 2095, price.Cached: 900, price.CacheWrite: 100, price.Output: 503}, "claude-sonnet-4-20250514", 2598},
		{"anthropic SSE", "anthropic", true, usageAnthropicSSE, price.Tokens{price.Input: 25, price.Output: 15}, "claude-sonnet-4-20250514", 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk, model, total := usageTokens(t, tc.preset, tc.sse, tc.body)
			if tk != tc.want || model != tc.model || total != tc.total {
				t.Fatalf("got %v %q total %d; want %v %q total %d", tk, model, total, tc.want, tc.model, tc.total)
			}
		})
	}
}

// Anthropic's message_delta carries cumulative counts: with server tools,
// input_tokens and the cache counts too, which replace message_start's.
func TestUsageAnthropicDeltaInput(t *testing.T) {
	body := strings.Replace(usageAnthropicSSE, `"usage":{"output_tokens":15}`,
		`"usage":{"input_tokens":2679,"cache_creation_input_tokens":null,"cache_read_input_tokens":600,"output_tokens":931,"server_tool_use":{"web_search_requests":1}}`, 1)
	tk, _, total := usageTokens(t, "anthropic", true, body)
	want := price.Tokens{price.Input: 2679, price.Cached: 600, price.Output: 931, price.WebSearch: 1}
	if tk != want || total != 2679+931 {
		t.Fatalf("got %v, total %d; want %v, total %d", tk, total, want, 2679+931)
	}
}

// Counts that do not add up (cached beyond the input) are clamped: no kind
// goes negative, and the total stays what the API reported.
func TestUsageTokensClamped(t *testing.T) {
	body := strings.NewReplacer(`"cached_tokens": 0`, `"cached_tokens": 500`, `"reasoning_tokens": 0`, `"reasoning_tokens": 99`).Replace(usageChatJSON)
	tk, _, total := usageTokens(t, "openai_chat", false, body)
	if want := (price.Tokens{price.Cached: 19, price.Reasoning: 10}); tk != want || total != 29 {
		t.Fatalf("got %v total %d, want %v total 29", tk, total, want)
	}
}

// A model name longer than price.MaxModelLen, or not a string, is none.
func TestUsageModelBounded(t *testing.T) {
	for _, model := range []string{`"` + strings.Repeat("m", price.MaxModelLen+1) + `"`, `7`, `null`, `{"a":"b"}`} {
		body := strings.Replace(usageAnthropicJSON, `"claude-sonnet-4-20250514"`, model, 1)
		if _, got, _ := usageTokens(t, "anthropic", false, body); got != "" {
			t.Errorf("model %.20s read as %q", model, got)
		}
	}
	body := strings.Replace(usageAnthropicJSON, `"claude-sonnet-4-20250514"`, `"`+strings.Repeat("m", price.MaxModelLen)+`"`, 1)
	if _, got, _ := usageTokens(t, "anthropic", false, body); len(got) != price.MaxModelLen {
		t.Errorf("a model of %d bytes read as %d bytes", price.MaxModelLen, len(got))
	}
	var u Scanner // custom paths have no kinds
	usageScan(&u, Paths([]string{"usage.input_tokens"}), false, 1<<20, []byte(usageAnthropicJSON))
	if tk, model := u.Tokens(); tk != (price.Tokens{}) || model != "" {
		t.Errorf("custom paths gave tokens %v, model %q", tk, model)
	}
}
