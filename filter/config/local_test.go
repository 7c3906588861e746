package config

import (
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
)

// localConfig is a configuration under failure_mode: local; extra holds
// more top-level fields, each followed by a comma.
func localConfig(share, extra, rules string) string {
	return `{"redis":{"cluster":"redis"},"headers":"both",` + extra +
		`"failure_mode":"local","local_fallback":{"share":` + share + `},"rules":` + rules + `}`
}

const localPerUser = `[{"name":"per-user","key":[{"source":"header","name":"x-user"}],
	"limits":[{"algorithm":"sliding_log","limit":4,"window":"1m"}]}]`

// Each limit is scaled to the share, rounded up, at least 1, exactly:
// 0.1 × 30 is 3, not the 4 that 0.1 × 30.0 in floating point rounds up to.
func TestLocalShareScalesLimits(t *testing.T) {
	for _, c := range []struct {
		share      string
		n, want    int64
		maxKeys    int
		maxKeysSet string
	}{
		{"0.25", 20, 5, 10000, ""}, {"0.25", 10, 3, 10000, ""}, {"0.1", 30, 3, 10000, ""},
		{"0.3", 1, 1, 10000, ""}, {"1", 7, 7, 5, `,"max_keys":5`}, {"0.333333", 3, 1, 10000, ""},
		{"0.000001", 1 << 50, 1125899907, 10000, ""},
	} {
		cfg, err := Parse([]byte(strings.Replace(localConfig(c.share, "", localPerUser),
			`"share":`+c.share, `"share":`+c.share+c.maxKeysSet, 1)))
		if err != nil {
			t.Fatalf("share %s: %v", c.share, err)
		}
		if got := cfg.Local.part(c.n); got != c.want || cfg.Local.MaxKeys != c.maxKeys || cfg.FailOpen {
			t.Errorf("share %s of %d: %d, want %d (max_keys %d)", c.share, c.n, got, c.want, cfg.Local.MaxKeys)
		}
	}
	f := LocalFallback{Share: 250000}
	funnel, _ := algorithms.NewFunnel(16, 30, time.Minute)
	if got := f.Scale(funnel); got.Burst != 4 || got.Rate != 8 || got.Period != time.Minute {
		t.Fatalf("funnel scaled to %+v, want capacity 4 draining 8 per minute", got)
	}
}
