package filter

import (
	"fmt"
	"testing"
)

const nearRules = `{"redis":{"cluster":"redis"},"near_limit_ratio":0.5,"rules":[
	{"name":"api","key":[{"source":"header","name":"x-user"}],
	 "limits":[{"name":"per-minute","algorithm":"sliding_log","limit":10,"window":"1m"}],
	 "near_limit":{"ratio":0.8,"header":"x-ratelimit-warning"}},
	{"name":"plain","key":[{"source":"header","name":"x-user"}],
	 "limits":[{"name":"per-hour","algorithm":"sliding_log","limit":10,"window":"1h"}]}]}`

// Limit 10, ratio 0.8: the 9th and 10th admissions warn and count, the
// 11th is denied without a warning; the rule without near_limit keeps
// near_limit_ratio (0.5: from the 6th).
func TestNearLimitWarnsAtTheBoundary(t *testing.T) {
	h := newFakeHost(t, nearRules)
	for i := 1; i <= 11; i++ {
		o := h.send("x-user=u")
		warning, warned := o.headers["x-ratelimit-warning"]
		switch {
		case i <= 8 && (o.status != 200 || warned):
			t.Fatalf("request %d: %d, warning %q", i, o.status, warning)
		case i == 9 || i == 10:
			if want := fmt.Sprintf(`"per-minute";r=%d`, 10-i); o.status != 200 || warning != want {
				t.Fatalf("request %d: %d, warning %q, want %q", i, o.status, warning, want)
			}
		case i == 11 && (o.status != 429 || warned):
			t.Fatalf("request 11: %d, warning %q", o.status, warning)
		}
	}
	if n := h.Counters["ratelimit.rule.api.near_limit"]; n != 2 {
		t.Fatalf("api near_limit %d, want 2", n)
	}
	if n := h.Counters["ratelimit.rule.plain.near_limit"]; n != 5 {
		t.Fatalf("plain near_limit %d, want 5 (requests 6 to 10)", n)
	}
}

// Two rules naming one header share it, one item each; a shadow rule's
// limits count but never warn.
func TestNearLimitRulesShareTheHeader(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[
		{"name":"a","key":[{"source":"header","name":"x-user"}],"limits":[{"name":"a-min","algorithm":"sliding_log","limit":2,"window":"1m"}],
		 "near_limit":{"ratio":0.5,"header":"x-warn"}},
		{"name":"b","key":[{"source":"header","name":"x-user"}],"limits":[{"name":"b-min","algorithm":"sliding_log","limit":4,"window":"1m"}],
		 "near_limit":{"ratio":0.25,"header":"x-warn"}},
		{"name":"s","shadow":true,"key":[{"source":"header","name":"x-user"}],"limits":[{"name":"s-min","algorithm":"sliding_log","limit":1,"window":"1m"}],
		 "near_limit":{"ratio":0.5,"header":"x-shadow"}}]}`)
	if o := h.send("x-user=u"); o.headers["x-warn"] != "" || o.headers["x-shadow"] != "" {
		t.Fatalf("request 1: %v", o.headers)
	}
	o := h.send("x-user=u")
	if want := `"a-min";r=0, "b-min";r=2`; o.status != 200 || o.headers["x-warn"] != want || o.headers["x-shadow"] != "" {
		t.Fatalf("request 2: %d %v, want x-warn %q", o.status, o.headers, want)
	}
	if n := h.Counters["ratelimit.rule.s.near_limit"]; n != 1 {
		t.Fatalf("shadow near_limit %d, want 1", n)
	}
}
