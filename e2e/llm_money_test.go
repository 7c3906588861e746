package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// Costs in money (issue 25), end to end: a budget in micro-dollars spent
// across two models, each response settled at its model's prices, as
// JSON and as events, plain and gzip, through both modules and natively.

// llmPrices: gpt-4o (and its dated names) and o3-mini, whose reasoning
// tokens cost more than its other output, in US$ per million tokens.
const llmPrices = `"price":{"unit":"micro_usd","default":"refuse","model_header":"x-route-model","models":{` +
	`"gpt-4o":{"input":"2.50","cached_input":"1.25","output":"10"},` +
	`"gpt-4o-*":{"input":"2.50","cached_input":"1.25","output":"10"},` +
	`"o3-mini":{"input":"1.10","cached_input":"0.55","output":"4.40","reasoning":"8.80"}}}`

func llmMoneyRule(limit int, extra string) string {
	return fmt.Sprintf(`{"name":"spend","key":[{"source":"header","name":"x-team"}],`+
		`"limits":[{"algorithm":"sliding_log","limit":%d,"window":"1h"}],`+
		`"response_cost":{"usage":"openai_chat",%s%s}}`, limit, llmPrices, extra)
}

// chatRequest is a request body naming model, as the hosts send it (the
// native target sends none).
func chatRequest(model string) string { return `{"model":"` + model + `","messages":[]}` }

// A budget of 18,020 micro-dollars, reserving each request's few input
// tokens at its model's prices, and charged at each response what its
// model's prices make of its tokens:
//
//	gpt-4o JSON:   800 × 2.50 + 200 cached × 1.25 + 500 × 10       = 7,250
//	o3-mini SSE:   3,001 × 1.10 + 400 × 4.40 + 600 reasoning × 8.80 = 10,341.1, charged 10,342
//	gpt-4o gzip JSON: 100 × 2.50 + 10 × 10                          = 350
//	o3-mini gzip SSE: 10 × 1.10 + 10 × 4.40                         = 55
//	gpt-4o JSON:   3 output tokens                                 = 30
//
// 17,997 spent after four, so the fifth is admitted (its reservation of at
// most 9 × 2.50 fits the 23 left) and overdraws to 18,027; the sixth is
// denied.
func TestLLMMoneyBudgetAcrossModels(t *testing.T) {
	steps := []struct {
		model, stream, gzip    string
		in, cached, out, think int
		cost                   int64
	}{
		{"gpt-4o-2024-08-06", "0", "0", 1000, 200, 500, 0, 7250},
		{"o3-mini", "1", "0", 3001, 0, 1000, 600, 10342},
		{"gpt-4o", "0", "1", 100, 0, 10, 0, 350},
		{"o3-mini", "1", "1", 10, 0, 10, 0, 55},
		{"gpt-4o", "0", "0", 0, 0, 3, 0, 30},
	}
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			up := newLLMUpstream(t)
			tg := startLLM(t, kind, llmConfig(redistest.Prefix(t), llmMoneyRule(18020, "")), up)
			var spent int64
			for i, st := range steps {
				r := tg.call(t, "/v1/chat/completions", map[string]string{"x-team": "a", "x-model": st.model, llmBody: chatRequest(st.model), "x-stream": st.stream,
					"x-gzip": st.gzip, "accept-encoding": "gzip", "x-usage-in": fmt.Sprint(st.in), "x-usage-cached": fmt.Sprint(st.cached),
					"x-usage-out": fmt.Sprint(st.out), "x-usage-reasoning": fmt.Sprint(st.think)})
				if r.status != 200 || r.reset {
					t.Fatalf("step %d (%s): status %d (reset %t), want 200", i+1, st.model, r.status, r.reset)
				}
				spent += st.cost
				waitMetric(t, tg, "ratelimit.rule.spend.units_charged", spent-reservedSoFar(kind, steps[:i+1]))
			}
			r := tg.call(t, "/v1/chat/completions", map[string]string{"x-team": "a", "x-model": "gpt-4o", llmBody: chatRequest("gpt-4o"), "x-usage-out": "1"})
			if r.status != 429 || !strings.Contains(r.body, "rate_limited") {
				t.Fatalf("after %d of 18020 micro-dollars: status %d %s, want 429 rate_limited", spent, r.status, r.body)
			}
			if got := tg.metric("ratelimit.rule.spend.usage_missing"); got != 0 {
				t.Errorf("usage_missing %d: a gzip body's usage was not read", got)
			}
			if got := tg.metric("ratelimit.rule.spend.units_overdrawn"); got != 7 {
				t.Errorf("units_overdrawn %d, want 7 (18,027 - 18,020)", got)
			}
		})
	}
}

// reservedSoFar is what the steps' requests reserved, in micro-dollars:
// each body's input tokens (4 bytes a token, rounded up) at its model's
// input price (gpt-4o's $2.50 or o3-mini's $1.10 per million), rounded
// up; the native target sends no body but a content-length of 27, and no
// model, so the table's dearest input price, gpt-4o's.
func reservedSoFar(kind string, steps []struct {
	model, stream, gzip    string
	in, cached, out, think int
	cost                   int64
}) int64 {
	var sum int64
	for _, st := range steps {
		n, tenths := int64(len(chatRequest(st.model))), int64(25) // tenths of a micro-dollar a token
		if kind == "native" {
			n = 27
		} else if st.model == "o3-mini" {
			tenths = 11
		}
		sum += ((n+3)/4*tenths + 9) / 10
	}
	return sum
}

// A reservation in money: max_tokens (here x-max-tokens) output tokens and
// the request's size (27 bytes: 7 input tokens) at the named model's
// prices, 7 × 2.50 + 1,000 × 10 = 10,017.5, reserved 10,018. The response
// costs 40 × 2.50 + 60 × 10 = 700, so 9,318 come back. A model the table
// refuses is denied at the request. A response naming one, with no model
// at the request, is charged at the table's dearest prices (700 again,
// gpt-4o's), counted in model_unlisted; its reservation, made at the same
// prices, is 7 × 2.50 + 100 × 10 = 1,017.5, so 1,018, and 318 come back.
func TestLLMMoneyReservation(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			up := newLLMUpstream(t)
			tg := startLLM(t, kind, llmConfig(redistest.Prefix(t), llmMoneyRule(100000, `,"reserve":{"header":"x-max-tokens","default":100}`)), up)
			h := map[string]string{"x-team": "a", "content-length": "27", "x-route-model": "gpt-4o", "x-max-tokens": "1000", llmBody: `{"model":"gpt-4o","msgs":[]}`,
				"x-model": "gpt-4o-2024-08-06", "x-usage-in": "40", "x-usage-out": "60", "x-stream": "1"}
			r := tg.call(t, "/v1/chat/completions", h)
			if r.status != 200 || !strings.Contains(r.headers["ratelimit"], "r=89982;") {
				t.Fatalf("status %d, ratelimit %q; want 200 with r=89982 (100000 - 10018 reserved)", r.status, r.headers["ratelimit"])
			}
			waitMetric(t, tg, "ratelimit.rule.spend.units_refunded", 9318)

			h["x-route-model"] = "gpt-5"
			if r := tg.call(t, "/v1/chat/completions", h); r.status != 400 || !strings.Contains(r.body, `"unknown_model"`) {
				t.Fatalf("a refused model: status %d, body %q; want 400 with unknown_model", r.status, r.body)
			}

			delete(h, "x-route-model")
			delete(h, "x-max-tokens")
			h[llmBody] = `{"messages":[],"pad":"xxx"}`
			h["x-model"] = "mystery-1"
			r = tg.call(t, "/v1/chat/completions", h)
			if r.status != 200 || !strings.Contains(r.headers["ratelimit"], fmt.Sprintf("r=%d;", 100000-700-1018)) {
				t.Fatalf("status %d, ratelimit %q; want 200 with r=%d (1018 reserved at the dearest prices)", r.status, r.headers["ratelimit"], 100000-700-1018)
			}
			waitMetric(t, tg, "ratelimit.rule.spend.units_refunded", 9318+318)
			if got := tg.metric("ratelimit.rule.spend.model_unlisted"); got != 1 {
				t.Errorf("model_unlisted %d, want 1", got)
			}
			if got := tg.metric("ratelimit.rule.spend.usage_missing"); got != 0 {
				t.Errorf("usage_missing %d: the usage was read", got)
			}
		})
	}
}
