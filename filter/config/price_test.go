package config

import (
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/price"
	"github.com/redisrate/envoy-redis-ratelimit/filter/usage"
)

// The new kinds' defaults: cache_write_1h is cache_write's price (itself
// input's), web_search and web_fetch cost nothing; a price per 1000
// requests is held per million; service tiers are multipliers in
// billionths.
func TestPriceKindsAndTiers(t *testing.T) {
	c, err := Parse(readFixture(t, "testdata/valid/response-cost-money-anthropic.json"))
	if err != nil {
		t.Fatal(err)
	}
	tb := c.Rules[0].Response.Price
	p, ok := tb.Lookup("claude-sonnet-4-5-20250929")
	if !ok {
		t.Fatal("claude-sonnet-4-5* not found")
	}
	nano := func(whole, frac uint64) uint64 { return whole*price.One + frac }
	if want := (price.Prices{nano(3, 0), nano(0, 300_000_000), nano(3, 750_000_000), nano(6, 0), nano(15, 0), nano(15, 0), 10_000 * price.One, 0}); *p != want {
		t.Errorf("claude prices %v, want %v", *p, want)
	}
	d := tb.Default
	if d[price.Cached] != nano(15, 0) || d[price.CacheWrite1h] != nano(30, 0) || d[price.WebFetch] != 0 {
		t.Errorf("default prices %v", *d)
	}
	if tb.Multiplier("batch", true) != price.One/2 || tb.Multiplier("flex", true) != 2*price.One || tb.Multiplier("standard", true) != price.One {
		t.Errorf("tiers %v", tb.Tiers)
	}

	cfg := `{"redis":{"cluster":"r"},"rules":[{"name":"r","key":[{"source":"header","name":"x"}],"limits":[{"algorithm":"sliding_log","limit":1000,"window":"1h"}],` +
		`"response_cost":{"usage":"anthropic","price":{"unit":"micro_usd","models":{"m":{"input":"3","cache_write":"3.75","output":"15"}},"default":"refuse"}}}]}`
	c, err = Parse([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	tb = c.Rules[0].Response.Price
	if m := tb.Models["m"]; m[price.CacheWrite1h] != nano(3, 750_000_000) || m[price.WebSearch] != 0 || tb.Tiers != nil {
		t.Errorf("defaults: prices %v, tiers %v", *m, tb.Tiers)
	}
}

// A usage field is bounded as a response's cost is.
func TestUsageBoundIsResponseCostBound(t *testing.T) {
	if usage.MaxValue != MaxResponseCost {
		t.Fatalf("usage.MaxValue %d, MaxResponseCost %d", usage.MaxValue, MaxResponseCost)
	}
}
