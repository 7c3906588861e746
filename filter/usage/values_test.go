package usage

import (
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/price"
)

// Crafted Anthropic bodies: cache writes split by lifetime, server tools,
// and a stream whose cumulative counts come back smaller.
const (
	usageAnthropicSplitJSON = `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Hi"}],"usage":{"input_tokens":50,"cache_creation_input_tokens":300,"cache_read_input_tokens":1000,"cache_creation":{"ephemeral_5m_input_tokens":100,"ephemeral_1h_input_tokens":200},"output_tokens":40,"server_tool_use":{"web_search_requests":3,"web_fetch_requests":2},"service_tier":"priority"}}`
	usageAnthropicDownSSE   = "event: message_start\n" +
		`data: {"type":"message_start","message":{"id":"msg_02","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","usage":{"input_tokens":25,"cache_creation_input_tokens":300,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":100,"ephemeral_1h_input_tokens":200},"output_tokens":1,"service_tier":"standard"}}}` + "\n\n" +
		"event: message_delta\n" +
		`data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"input_tokens":25,"output_tokens":90,"server_tool_use":{"web_search_requests":2}}}` + "\n\n" +
		"event: message_delta\n" +
		`data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":10,"cache_creation_input_tokens":50,"output_tokens":15,"server_tool_use":{"web_search_requests":1}}}` + "\n\n" +
		"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n"
)

// A field that is not a non-negative integer up to MaxValue makes the
// whole usage missing, in each preset, in a body and in a stream: not the
// usage without that field.
func TestUsageBadFieldIsMissingWhole(t *testing.T) {
	for _, v := range []string{`1e308`, `1.5`, `-5`, `"7"`, `9223372036854775808`, `1099511627777`, `true`, `{}`, `[1]`} {
		for _, tc := range []struct {
			preset string
			sse    bool
			body   string
			field  string // replaced by v
		}{
			{"openai_chat", false, usageChatJSON, `"cached_tokens": 0`},
			{"openai_chat", false, usageChatJSON, `"completion_tokens": 10`},
			{"openai_chat", true, usageChatSSE, `"reasoning_tokens":0`},
			{"openai_responses", false, usageResponsesJSON, `"cached_tokens":0`},
			{"openai_responses", true, usageResponsesSSE, `"output_tokens":11`},
			{"anthropic", false, usageAnthropicJSON, `"cache_read_input_tokens":0`},
			{"anthropic", true, usageAnthropicSSE, `"output_tokens":7`},
			{"anthropic", false, usageAnthropicSplitJSON, `"web_search_requests":3`},
			{"anthropic", true, usageAnthropicDownSSE, `"ephemeral_1h_input_tokens":200`},
		} {
			name, _, _ := strings.Cut(tc.field, ":")
			body := strings.Replace(tc.body, tc.field, name+":"+v, 1)
			if body == tc.body {
				t.Fatalf("%s: %s not in the body", tc.preset, tc.field)
			}
			var u Scanner
			if got, found := usageScan(&u, usagePreset(tc.preset), tc.sse, 1<<20, []byte(body)); found {
				t.Errorf("%s (sse %v) with %s %s: found %d, want the usage missing", tc.preset, tc.sse, name, v, got)
			}
		}
	}
}

// Anthropic's streamed counts are cumulative: a later event with a smaller
// count (output 90, then 15; input 25, then 10) does not lower the charge,
// and a message_delta that repeats input_tokens does not add them twice.
func TestUsageAnthropicCountsNeverGoDown(t *testing.T) {
	tk, model, total := usageTokens(t, "anthropic", true, usageAnthropicDownSSE)
	if tk[price.Input] != 25 || tk[price.Output] != 90 || total != 25+90 || model != "claude-sonnet-4-5" {
		t.Fatalf("got %v total %d model %q; want input 25, output 90, total %d", tk, total, model, 25+90)
	}
}

// The same stream's other kinds: the cache writes of message_start (the
// later, smaller total does not lower them) and the most web searches.
func TestUsageAnthropicStreamKinds(t *testing.T) {
	tk, _, _ := usageTokens(t, "anthropic", true, usageAnthropicDownSSE)
	want := price.Tokens{price.Input: 25, price.CacheWrite: 100, price.CacheWrite1h: 200, price.Output: 90, price.WebSearch: 2}
	if tk != want {
		t.Fatalf("got %v; want %v", tk, want)
	}
}

// Anthropic's cache writes: 5-minute and 1-hour apart; without the split,
// cache_creation_input_tokens are 5-minute writes; a total above the
// split's sum charges the rest as 5-minute writes, never twice.
func TestUsageAnthropicCacheSplit(t *testing.T) {
	noSplit := strings.Replace(usageAnthropicSplitJSON, `"cache_creation":{"ephemeral_5m_input_tokens":100,"ephemeral_1h_input_tokens":200},`, "", 1)
	over := strings.Replace(usageAnthropicSplitJSON, `"cache_creation_input_tokens":300`, `"cache_creation_input_tokens":450`, 1)
	onlySplit := strings.Replace(usageAnthropicSplitJSON, `"cache_creation_input_tokens":300,`, "", 1)
	only1h := strings.Replace(usageAnthropicSplitJSON, `"ephemeral_5m_input_tokens":100,`, "", 1)
	base := price.Tokens{price.Input: 50, price.Cached: 1000, price.Output: 40, price.WebSearch: 3, price.WebFetch: 2}
	with := func(w5m, w1h int64) price.Tokens {
		t := base
		t[price.CacheWrite], t[price.CacheWrite1h] = w5m, w1h
		return t
	}
	for _, tc := range []struct {
		name, body string
		want       price.Tokens
	}{
		{"split", usageAnthropicSplitJSON, with(100, 200)},
		{"no split", noSplit, with(300, 0)},
		{"total above the split", over, with(250, 200)},
		{"split without total", onlySplit, with(100, 200)},
		{"1h only, with total", only1h, with(100, 200)},
	} {
		if tk, _, total := usageTokens(t, "anthropic", false, tc.body); tk != tc.want || total != 90 {
			t.Errorf("%s: got %v total %d; want %v total 90", tc.name, tk, total, tc.want)
		}
	}
}

// The service tier a response names, in a body and streamed, per preset;
// unclear ones are not known.
func TestUsageServiceTier(t *testing.T) {
	chatSSE := strings.ReplaceAll(usageChatSSE, `"system_fingerprint"`, `"service_tier":"flex","system_fingerprint"`)
	respSSE := strings.Replace(usageResponsesSSE, `"usage":{"input_tokens":37`, `"service_tier":"priority","usage":{"input_tokens":37`, 1)
	for _, tc := range []struct {
		name, preset string
		sse          bool
		body, tier   string
		known        bool
	}{
		{"chat JSON", "openai_chat", false, usageChatJSON, "default", true},
		{"chat SSE", "openai_chat", true, chatSSE, "flex", true},
		{"chat SSE without tier", "openai_chat", true, usageChatSSE, "", true},
		{"responses JSON", "openai_responses", false, strings.Replace(usageResponsesJSON, `"store"`, `"service_tier":"flex","store"`, 1), "flex", true},
		{"responses SSE", "openai_responses", true, respSSE, "priority", true},
		{"anthropic JSON", "anthropic", false, usageAnthropicSplitJSON, "priority", true},
		{"anthropic SSE", "anthropic", true, usageAnthropicDownSSE, "standard", true},
		{"anthropic SSE, two tiers", "anthropic", true, strings.Replace(usageAnthropicDownSSE, `"output_tokens":15`, `"output_tokens":15,"service_tier":"batch"`, 1), "", false},
		{"anthropic SSE, the same tier again", "anthropic", true, strings.Replace(usageAnthropicDownSSE, `"output_tokens":15`, `"output_tokens":15,"service_tier":"standard"`, 1), "standard", true},
		{"not a string", "openai_chat", false, strings.Replace(usageChatJSON, `"service_tier": "default"`, `"service_tier": 2`, 1), "", false},
		{"null", "openai_chat", false, strings.Replace(usageChatJSON, `"service_tier": "default"`, `"service_tier": null`, 1), "", true},
		{"too long", "openai_chat", false, strings.Replace(usageChatJSON, `"default"`, `"`+strings.Repeat("t", price.MaxTierLen+1)+`"`, 1), "", false},
		{"longest", "openai_chat", false, strings.Replace(usageChatJSON, `"default"`, `"`+strings.Repeat("t", price.MaxTierLen)+`"`, 1), strings.Repeat("t", price.MaxTierLen), true},
	} {
		var u Scanner
		if _, found := usageScan(&u, usagePreset(tc.preset), tc.sse, 1<<20, []byte(tc.body)); !found {
			t.Fatalf("%s: no usage", tc.name)
		}
		if tier, known := u.ServiceTier(); tier != tc.tier || known != tc.known {
			t.Errorf("%s: tier %q, known %v; want %q, %v", tc.name, tier, known, tc.tier, tc.known)
		}
	}
}

// exactInt against worked cases at its edges.
func TestUsageExactInt(t *testing.T) {
	for s, want := range map[string]int64{
		"0": 0, "-0": 0, "0.000": 0, "0e999999": 0, "-0.0e-5": 0, "7": 7, "100.0": 100, "1e2": 100, "1E+2": 100,
		"1000e-1": 100, "0.5e1": 5, "00012": 12, "1099511627776": MaxValue, "1.099511627776e12": MaxValue,
		"1.5": -1, "-5": -1, "-1e2": -1, "1e308": -1, "1e-1": -1, "1099511627777": -1, "1e13": -1, "9999999999999": -1,
		"1e": -1, "1.": -1, ".5": -1, "": -1, "-": -1, "1x": -1, "e5": -1, "1e999999999999": -1,
	} {
		v, ok := exactInt(s)
		if got := map[bool]int64{true: v, false: -1}[ok]; got != want {
			t.Errorf("exactInt(%q) = %d, %v; want %d", s, v, ok, want)
		}
	}
}
