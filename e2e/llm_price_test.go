package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// Issue 29, items 2 and 3, end to end through both modules: the price is
// never the cheapest guess, and every response's usage is counted.

// teamSpendConfig is docs/ai-budgets.md's monthly team budget (refuse,
// model_header x-model), under prefix.
func teamSpendConfig(prefix string) string {
	return fmt.Sprintf(`{"redis":{"cluster":"redis","key_prefix":%q,"timeout":"2s"},"quota_endpoint":{"path":"/v1/quota"},
 "rules":[{"name":"team-budget","match":{"path":"/v1/chat/completions","methods":["POST"]},
   "key":[{"source":"header","name":"x-team"}],"on_missing_key":"deny",
   "limits":[{"name":"usd-per-month","algorithm":"calendar","limit":20000,"period":"month","time_zone":"Europe/Berlin"}],
   "response_cost":{"usage":"openai_chat","reserve":{"header":"x-max-tokens","default":1000},
     "price":{"unit":"micro_usd","default":"refuse","model_header":"x-model","models":{
       "gpt-4o":{"input":"2.50","output":"10"},
       "o3-mini":{"input":"1.10","output":"4.40"}}}},
   "on_limit":{"action":"degrade"}}]}`, prefix)
}

// The attack on the documented team budget: x-model names o3-mini
// while the body asks for a model the table does not list, or the
// response names one. 1,000 input and 100 output tokens cost 3,500 at
// gpt-4o's prices (the table's dearest), 1,540 at o3-mini's.
//   - As documented (on_limit degrade: decided at the headers, before the
//     proxy routes, so the body is not read): the response naming the
//     unlisted model is charged 3,500, counted in model_unlisted (b8f0dfd:
//     1,540).
//   - Without degrade, the body is read: a body naming an unlisted model is
//     refused at the request (b8f0dfd: 200), and a body naming gpt-4o
//     under x-model: o3-mini is charged at gpt-4o's prices whatever the
//     response names (b8f0dfd: 1,540).
func TestLLMPriceNeverTheCheapestGuess(t *testing.T) {
	for _, kind := range moduleKinds {
		for _, degrade := range []bool{true, false} {
			t.Run(fmt.Sprint(kind, "/degrade=", degrade), func(t *testing.T) {
				up := newLLMUpstream(t)
				config := teamSpendConfig(redistest.Prefix(t))
				if !degrade {
					config = strings.Replace(config, `,
   "on_limit":{"action":"degrade"}`, "", 1)
				}
				tg := startLLM(t, kind, config, up)
				body := func(model string) string { return `{"model":"` + model + `","max_tokens":100,"messages":[]}` }
				call := func(team, header, bodyModel, answer string) llmResult {
					return tg.call(t, "/v1/chat/completions", map[string]string{"x-team": team, "x-model": header, llmBody: body(bodyModel),
						"x-max-tokens": "100", "x-answer-model": answer, "x-usage-in": "1000", "x-usage-out": "100"})
				}
				cases := []struct {
					team, bodyModel, answer string
					unlisted                int64
				}{{"b", "gpt-5", "gpt-5", 1}}
				if !degrade {
					if r := call("a", "o3-mini", "gpt-5", "gpt-5"); r.status != 400 || !strings.Contains(r.body, `"unknown_model"`) || !strings.Contains(r.body, `"model":"gpt-5"`) {
						t.Fatalf("body naming an unlisted model: status %d %s; want 400 unknown_model gpt-5", r.status, r.body)
					}
					cases = []struct {
						team, bodyModel, answer string
						unlisted                int64
					}{{"b", "o3-mini", "gpt-5", 1}, {"c", "gpt-4o", "o3-mini", 0}}
				}
				for _, c := range cases {
					settled := tg.metric("ratelimit.rule.team-budget.units_charged") - tg.metric("ratelimit.rule.team-budget.units_refunded")
					unlisted := tg.metric("ratelimit.rule.team-budget.model_unlisted")
					r := call(c.team, "o3-mini", c.bodyModel, c.answer)
					var left int64
					if i := strings.Index(r.headers["ratelimit"], "r="); r.status != 200 || i < 0 {
						t.Fatalf("team %s: status %d, ratelimit %q", c.team, r.status, r.headers["ratelimit"])
					} else {
						fmt.Sscanf(r.headers["ratelimit"][i:], "r=%d;", &left)
					}
					reserved := 20000 - left
					var cost int64
					waitFor(t, "the settle", func() bool {
						cost = reserved + tg.metric("ratelimit.rule.team-budget.units_charged") - tg.metric("ratelimit.rule.team-budget.units_refunded") - settled
						return cost != reserved
					})
					if cost != 3500 {
						t.Errorf("team %s (body %s, response %s): charged %d, want 3,500 at gpt-4o's prices", c.team, c.bodyModel, c.answer, cost)
					}
					if got := tg.metric("ratelimit.rule.team-budget.model_unlisted") - unlisted; got != c.unlisted {
						t.Errorf("team %s: model_unlisted +%d, want +%d", c.team, got, c.unlisted)
					}
				}
			})
		}
	}
}

// The case: 20 chat streams without stream_options.include_usage,
// each asking for 1 token (x-max-tokens), against a budget of 1,000
// tokens. With a 3,000-word prompt (18,000 bytes: 4,500 input tokens
// reserved) none fits; with a 2,000-byte one, the first is admitted and,
// with no usage, charged the estimate (1 + 2,000, capped at the budget),
// which spends it. On b8f0dfd all 20 passed, charged 1 token each.
func TestLLMStreamsWithoutUsageCannotPassABudget(t *testing.T) {
	for _, kind := range moduleKinds {
		for _, c := range []struct{ bytes, passes int }{{18_000, 0}, {2_000, 1}} {
			t.Run(fmt.Sprint(kind, "/", c.bytes), func(t *testing.T) {
				up := newLLMUpstream(t)
				tg := startLLM(t, kind, llmConfig(redistest.Prefix(t), `{"name":"tpm","key":[{"source":"header","name":"x-api-key"}],`+
					`"limits":[{"algorithm":"sliding_log","limit":1000,"window":"1h"}],`+
					`"response_cost":{"usage":"openai_chat","reserve":{"header":"x-max-tokens","default":1}}}`), up)
				head := `{"model":"gpt-4o","max_tokens":1,"stream":true,"messages":[{"role":"user","content":"`
				body := head + strings.Repeat("word ", (c.bytes-len(head)-4)/5) + `"}]}`
				passed := 0
				for i := range 20 {
					r := tg.call(t, "/v1/chat/completions", map[string]string{"x-api-key": "k", "x-max-tokens": "1", llmBody: body,
						"x-stream": "1", "x-no-usage": "1", "x-usage-in": "0", "x-usage-out": "1"})
					if r.status == 200 {
						passed++
						waitMetric(t, tg, "ratelimit.rule.tpm.usage_missing", int64(passed))
					} else if r.status != 429 && r.status != 400 { // 400: a reservation above the capacity
						t.Fatalf("request %d: status %d", i, r.status)
					}
				}
				if passed != c.passes {
					t.Errorf("%d of 20 passed, want %d", passed, c.passes)
				}
			})
		}
	}
}

// A client asking for deflate (or any encoding but gzip) no longer hides
// its usage: the filter narrows Accept-Encoding before the upstream sees
// it, so the upstream answers identity (or gzip when the client takes
// it), the usage is read, and 1,200 tokens (charged 1,000: max_cost's
// default, the capacity) spend the budget of 1,000: 1 of 3 requests
// passes, as with identity. On b8f0dfd the upstream
// answered deflate, the usage was missing, and 3 of 3 passed.
func TestLLMAcceptEncodingCannotHideUsage(t *testing.T) {
	for _, kind := range moduleKinds {
		for _, accept := range []string{"identity", "deflate", "deflate, br", "br, gzip;q=0.5, deflate"} {
			t.Run(kind+"/"+accept, func(t *testing.T) {
				up := newLLMUpstream(t)
				tg := startLLM(t, kind, llmConfig(redistest.Prefix(t), `{"name":"tpm","key":[{"source":"header","name":"x-api-key"}],`+
					`"limits":[{"algorithm":"sliding_log","limit":1000,"window":"1h"}],"response_cost":{"usage":"openai_chat"}}`), up)
				passed := 0
				for range 3 {
					r := tg.call(t, "/v1/chat/completions", map[string]string{"x-api-key": "k", "accept-encoding": accept, "x-gzip": "auto",
						"x-stream": "1", "x-usage-in": "1000", "x-usage-out": "200"})
					if r.status == 200 {
						passed++
						waitMetric(t, tg, "ratelimit.rule.tpm.units_charged", 1000-llmInputTokens) // 1,200 capped at max_cost
					}
				}
				if passed != 1 {
					t.Errorf("%d of 3 passed, want 1", passed)
				}
				if got := tg.metric("ratelimit.rule.tpm.usage_missing"); got != 0 {
					t.Errorf("usage_missing %d: the usage was not read", got)
				}
			})
		}
	}
}

// A chat stream that does not ask for its usage is asked for it: the
// filter sets stream_options.include_usage in the body (content-length
// removed at the headers), so an upstream that, as OpenAI's, reports a
// stream's usage only when asked reports it, and the real use (400 input
// tokens, 1 output) is charged, not the estimate. On b8f0dfd the usage was
// missing and the reservation kept.
func TestLLMChatStreamIsAskedForUsage(t *testing.T) {
	for _, kind := range moduleKinds {
		t.Run(kind, func(t *testing.T) {
			up := newLLMUpstream(t)
			tg := startLLM(t, kind, llmConfig(redistest.Prefix(t), `{"name":"tpm","key":[{"source":"header","name":"x-api-key"}],`+
				`"limits":[{"algorithm":"sliding_log","limit":100000,"window":"1h"}],`+
				`"response_cost":{"usage":"openai_chat","reserve":{"header":"x-max-tokens","default":1}}}`), up)
			body := `{"model":"gpt-4o","max_tokens":1,"stream":true,"messages":[{"role":"user","content":"hello"}]}` // 92 bytes: 23 tokens
			r := tg.call(t, "/v1/chat/completions", map[string]string{"x-api-key": "k", "x-max-tokens": "1", llmBody: body,
				"x-stream": "1", "x-usage-if-asked": "1", "x-usage-in": "400", "x-usage-out": "1"})
			if r.status != 200 || r.reset || !strings.Contains(r.body, `"usage":{"prompt_tokens":400`) {
				t.Fatalf("status %d (reset %t), usage chunk %t; want 200 with the usage chunk", r.status, r.reset, strings.Contains(r.body, `"usage":{`))
			}
			waitMetric(t, tg, "ratelimit.rule.tpm.units_charged", 401-1-int64(len(body)+3)/4)
			if got := tg.metric("ratelimit.rule.tpm.usage_missing"); got != 0 {
				t.Errorf("usage_missing %d: the stream came without usage", got)
			}
		})
	}
}
