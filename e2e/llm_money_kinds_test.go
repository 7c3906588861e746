package e2e

import (
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// Issue 29: what providers bill apart, end to end. OpenAI's service tier
// multiplies a response's cost (flex ×0.5, priority ×2; a tier not
// listed pays the dearest); Anthropic's 1-hour cache writes and web
// searches have their own prices.

// TestLLMMoneyServiceTiers: gpt-4o, 1,000 input and 500 output tokens,
// 2,500 + 5,000 = 7,500 micro-dollars at ×1, per tier and transport. Each
// request reserves its 27 bytes as 7 input tokens at gpt-4o's price, 18
// micro-dollars, and the settle charges the rest.
func TestLLMMoneyServiceTiers(t *testing.T) {
	steps := []struct {
		tier, stream string
		cost         int64
	}{
		{"flex", "0", 3750},
		{"priority", "1", 15000},
		{"default", "0", 7500},
		{"", "1", 7500},
		{"scale", "0", 15000}, // not listed: the dearest multiplier
		{"flex", "1", 3750},
	}
	rule := `{"name":"spend","key":[{"source":"header","name":"x-team"}],` +
		`"limits":[{"algorithm":"sliding_log","limit":1000000,"window":"1h"}],` +
		`"response_cost":{"usage":"openai_chat","price":{"unit":"micro_usd","default":"refuse",` +
		`"models":{"gpt-4o":{"input":"2.50","output":"10"}},"service_tiers":{"flex":"0.5","priority":"2"}}}}`
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			up := newLLMUpstream(t)
			tg := startLLM(t, kind, llmConfig(redistest.Prefix(t), rule), up)
			var spent int64
			for i, st := range steps {
				r := tg.call(t, "/v1/chat/completions", map[string]string{"x-team": "a", "x-model": "gpt-4o", "x-stream": st.stream,
					"x-service-tier": st.tier, "x-usage-in": "1000", "x-usage-out": "500", llmBody: `{"model":"gpt-4o","x":"12"}`})
				if r.status != 200 || r.reset {
					t.Fatalf("step %d (%q): status %d (reset %t) %s, want 200", i+1, st.tier, r.status, r.reset, r.body)
				}
				spent += st.cost - 18
				waitMetric(t, tg, "ratelimit.rule.spend.units_charged", spent)
			}
		})
	}
}

// TestLLMMoneyAnthropicKinds: claude-sonnet-4-5, 100 input and 200 output
// tokens, 1,000 5-minute and 1,000 1-hour cache writes, 3 web searches:
// 300 + 3,000 + 3,750 + 6,000 + 30,000 = 43,050 micro-dollars; at the
// priority tier ×2, 86,100; a usage with a bad field (1.5 searches) is
// missing: on_missing default charges 5. Each request reserves its 29
// bytes as 8 input tokens at the dearest input price, the 1-hour cache
// write's $6 per million: 48 micro-dollars; the settle charges the rest,
// or refunds it.
func TestLLMMoneyAnthropicKinds(t *testing.T) {
	const kindsUsed = `"cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":1000},"server_tool_use":{"web_search_requests":3}`
	steps := []struct {
		stream, extra string
		cost          int64
	}{
		{"0", kindsUsed, 43050},
		{"1", kindsUsed, 43050},
		{"0", kindsUsed + `,"service_tier":"priority"`, 86100},
		{"1", kindsUsed + `,"service_tier":"standard"`, 43050},
		{"0", `"server_tool_use":{"web_search_requests":1.5}`, 5},
	}
	rule := `{"name":"spend","key":[{"source":"header","name":"x-team"}],` +
		`"limits":[{"algorithm":"sliding_log","limit":1000000,"window":"1h"}],` +
		`"response_cost":{"usage":"anthropic","on_missing":"default","default":5,"price":{"unit":"micro_usd","default":"refuse",` +
		`"models":{"claude-sonnet-4-5":{"input":"3","cache_write":"3.75","cache_write_1h":"6","output":"15","web_search":"10"}},` +
		`"service_tiers":{"priority":"2"}}}}`
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			up := newLLMUpstream(t)
			tg := startLLM(t, kind, llmConfig(redistest.Prefix(t), rule), up)
			var spent, refunded int64
			for i, st := range steps {
				const body = `{"model":"claude-sonnet-4-5"}`
				h := map[string]string{"x-team": "a", "x-stream": st.stream,
					"x-usage-in": "100", "x-usage-out": "200", "x-usage-extra": st.extra, llmBody: body}
				if kind == "native" { // it sends no body: its size, as the hosts send it
					h["content-length"] = "29"
				}
				r := tg.call(t, "/v1/messages", h)
				if r.status != 200 || r.reset {
					t.Fatalf("step %d: status %d (reset %t) %s, want 200", i+1, r.status, r.reset, r.body)
				}
				if st.cost < 48 {
					refunded += 48 - st.cost
					waitMetric(t, tg, "ratelimit.rule.spend.units_refunded", refunded)
					continue
				}
				spent += st.cost - 48
				waitMetric(t, tg, "ratelimit.rule.spend.units_charged", spent)
			}
			if got := tg.metric("ratelimit.rule.spend.usage_missing"); got != 1 {
				t.Errorf("usage_missing %d, want 1 (the bad field)", got)
			}
		})
	}
}
