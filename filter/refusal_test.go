package filter

import (
	"strings"
	"testing"
)

// refusalRules: a key rule (on_missing_key deny, cost from a header) and a
// priced rule refusing unlisted models, each with its refusal_status or
// the default, beside a plain limit that answers 429.
const refusalRules = `{"redis":{"cluster":"redis"},"headers":"both","rules":[
	{"name":"api","key":[{"source":"header","name":"x-api-key"},{"source":"jwt_claim","name":"org.id"}],
	 "on_missing_key":"deny","cost":{"header":"x-cost"},%s
	 "limits":[{"name":"burst","algorithm":"funnel","capacity":5,"rate":5,"period":"1h"}]},
	{"name":"llm","match":{"path":"/llm"},"key":[{"source":"constant","value":"all"}],
	 "response_cost":{"usage":"openai_chat","reserve":{"header":"x-max-tokens","default":10},
	  "price":{"unit":"micro_usd","default":"refuse","model_header":"x-model","models":{"gpt-4o":{"input":"2.50","output":"10"}}}},
	 "limits":[{"algorithm":"sliding_log","limit":1000000,"window":"1h"}]}]}`

// A request refused for its own content gets its rule's refusal_status
// (400 unless set), a body naming what is wrong, and no Retry-After or
// rate-limit headers: it is over no limit (issue 30: they were 429s). It
// counts as the rule's denial, and the decision line gives its reason.
func TestRefusalForContent(t *testing.T) {
	token := "Bearer eyJhbGciOiJub25lIn0.eyJvcmciOnsiaWQiOiJvMSJ9fQ.x" // {"org":{"id":"o1"}}
	for _, c := range []struct {
		name, status string
		want         int
	}{{"default", "", 400}, {"set", `"refusal_status":422,`, 422}} {
		t.Run(c.name, func(t *testing.T) {
			h := newFakeHost(t, strings.Replace(refusalRules, "%s", c.status, 1))
			for _, r := range []struct {
				headers      []string
				status       int
				body, reason string
			}{
				{nil, c.want, `{"error":"missing_key","rule":"api","part":"header x-api-key"}`, "rule=api decision=denied reason=missing_key"},
				{[]string{"x-api-key=k"}, c.want, `{"error":"missing_key","rule":"api","part":"jwt_claim org.id"}`, "rule=api decision=denied reason=missing_key"},
				{[]string{"x-api-key=k", "authorization=" + token, "x-cost=6"}, c.want, `{"error":"cost_exceeds_capacity","rule":"api","limit":"burst"}`,
					"rule=api limit=burst decision=denied reason=cost_exceeds_capacity"},
				{[]string{"x-api-key=k", "authorization=" + token, ":path=/llm", "x-model=gpt-9"}, 400, `{"error":"unknown_model","rule":"llm","model":"gpt-9"}`,
					"rule=llm decision=denied reason=unknown_model"},
				{[]string{"x-api-key=k", "authorization=" + token, ":path=/llm", "x-model=gpt-\x7f"}, 400, `{"error":"unknown_model","rule":"llm"}`,
					"rule=llm decision=denied reason=unknown_model"},
				{[]string{"x-api-key=k", "authorization=" + token, ":path=/llm", "x-model=" + strings.Repeat("m", maxModelShown+1)}, 400,
					`{"error":"unknown_model","rule":"llm"}`, "rule=llm decision=denied reason=unknown_model"},
			} {
				o, fs := h.sendStream(r.headers...)
				if o.status != r.status || o.body != r.body+"\n" || len(o.headers) != 1 || fs.Decision != r.reason {
					t.Errorf("%q: %d %s %v, told %q; want %d %s with content-type only, told %q",
						r.headers, o.status, o.body, o.headers, fs.Decision, r.status, r.body, r.reason)
				}
			}
			if got := h.Counters["ratelimit.rule.api.denied"]; got != 3 {
				t.Errorf("api denied %d, want 3", got)
			}
			if got := h.Counters["ratelimit.rule.llm.denied"]; got != 3 {
				t.Errorf("llm denied %d, want 3", got)
			}
			// Over the limit is still rejected_status, with its headers.
			for i, want := range []int{200, 429} {
				o := h.send("x-api-key=k", "authorization="+token, "x-cost=5")
				if o.status != want || want == 429 && o.headers["retry-after"] == "" {
					t.Fatalf("cost 5, request %d: %d %v, want %d", i, o.status, o.headers, want)
				}
			}
		})
	}
}
