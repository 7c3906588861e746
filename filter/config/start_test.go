package config

import (
	"reflect"
	"testing"
	"time"
)

// A field left out gets its default without its parser running (the
// parsers of unset features are skipped, for the first VM's start-up):
// the defaults are those the parsers give an absent field.
func TestUnsetFieldsTakeTheParsersDefaults(t *testing.T) {
	c, err := Parse([]byte(`{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"header","name":"X-User"}],` +
		`"limits":[{"algorithm":"funnel","capacity":10,"rate":10,"period":"1s"},{"algorithm":"sliding_counter","limit":100,"window":"1h"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !c.FailOpen || c.Local != nil || c.Breaker != (BreakerConfig{Failures: 5, Backoff: time.Second}) || c.Quota != nil ||
		c.DenyCacheKeys != 10000 || c.Redis.FlushTimeout != 0 || c.Redis.Authority != "" || c.Redis.Path != "" {
		t.Fatalf("config defaults: %+v", c)
	}
	r := c.Rules[0]
	if !reflect.DeepEqual(r.Match, Match{}) || r.Cost != (Cost{Default: 1}) || r.Response != nil || r.Tiers != nil ||
		r.Lease != nil || r.Throttle != nil || r.OnLimit != (OnLimit{}) || !reflect.DeepEqual(r.NearLimit, NearLimit{}) ||
		r.MaxRequestBodyBytes != DefaultMaxRequestBodyBytes || r.OnUnreadableBody != UnreadableDeny || r.RefusalStatus != DefaultRefusalStatus {
		t.Fatalf("rule defaults: %+v", r)
	}
	for _, d := range []struct {
		in   string
		want time.Duration
	}{{"1s", time.Second}, {"200ms", 200 * time.Millisecond}, {"1h", time.Hour}, {"90m", 90 * time.Minute}} {
		if got, ok := wholeUnits(d.in); !ok || got != d.want {
			t.Errorf("wholeUnits(%q) = %v, %v; want %v", d.in, got, ok, d.want)
		}
	}
}
