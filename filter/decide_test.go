package filter

import (
	"errors"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// Every reason has its own name, the "error" of the local reply's body.
func TestReasonNames(t *testing.T) {
	want := []string{"rate_limited", "blocked", "missing_key", "cost_exceeds_capacity", "ratelimit_unavailable", "unknown_model", "unreadable_body",
		"unknown_method", "unknown_tool", "too_many_keys"}
	for i, name := range want {
		if got := reason(i + 1).String(); got != name {
			t.Errorf("reason %d is %q, want %q", i+1, got, name)
		}
	}
	if got := reason(len(want) + 1).String(); got != "reason(11)" {
		t.Errorf("an unknown reason is %q", got)
	}
}

// A bad limit parameter or cost is the algorithms package's *ParamError,
// wrapped with the path of the field that set it and named as that field.
func TestLimitErrorsWrapParamErrors(t *testing.T) {
	rule := func(limits string) []byte {
		return []byte(`{"redis":{"cluster":"r"},"rules":[{"name":"r","key":[{"source":"path"}],` + limits + `}]}`)
	}
	for _, tc := range []struct {
		config []byte
		param  algorithms.Param
		msg    string
	}{
		{rule(`"limits":[{"algorithm":"token_bucket","capacity":1,"refill":3000000,"period":"1s"}]`),
			algorithms.ParamRate, "rules[0].limits[0].refill: period / refill must be >= 1us"},
		{rule(`"limits":[{"algorithm":"funnel","capacity":1099511627776,"rate":1,"period":"1s"}]`),
			algorithms.ParamBurst, "rules[0].limits[0].capacity: capacity * period / rate must be <= 2^48us"},
		{rule(`"limits":[{"algorithm":"sliding_counter","limit":5,"window":"1500us"}]`),
			algorithms.ParamPeriod, "rules[0].limits[0].window: must be a whole number of milliseconds"},
		{rule(`"limits":[{"algorithm":"sliding_log","limit":5,"window":"1s"},{"algorithm":"funnel","capacity":3,"rate":1,"period":"1s"}],"cost":{"header":"x","default":4}`),
			algorithms.ParamCost, "rules[0].cost.default: must be <= 3, the limit's capacity of limits[1]"},
	} {
		_, err := config.Parse(tc.config)
		var pe *algorithms.ParamError
		if !errors.As(err, &pe) || pe.Param != tc.param || err.Error() != tc.msg {
			t.Errorf("got %v (%#v), want %s from %s", err, pe, tc.msg, tc.param)
		}
	}
	// Under a _rules_ entry too.
	_, err := config.Parse([]byte(`{"_rules_":[{"_match_route_":["a"],"redis":{"cluster":"r"},"rules":[{"name":"r","key":[{"source":"path"}],
		"limits":[{"algorithm":"token_bucket","capacity":1,"refill":3000000,"period":"1s"}]}]}]}`))
	var pe *algorithms.ParamError
	if !errors.As(err, &pe) || err.Error() != "_rules_[0].rules[0].limits[0].refill: period / refill must be >= 1us" {
		t.Errorf("_rules_: %v", err)
	}
}
