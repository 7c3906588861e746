package keyspace

import (
	"encoding/json"
	"testing"
	"time"
)

// The quota endpoint's answer is JSON, a name's quote and control bytes
// escaped, and durations rounded up to whole seconds.
func TestAppendQuotaJSONIsValidJSON(t *testing.T) {
	rules := []RuleQuota{
		{Name: `a"b\c` + "\x01", State: KeyState{Tier: "pro", Override: true, Limits: []LimitState{
			{Name: "a.minute", Algorithm: "sliding_counter", Limit: 100, Used: 3, Remaining: 97,
				Reset: 41*time.Second + time.Millisecond, RetryAfter: -1, Quota: 100, Window: time.Minute},
		}}},
		{Name: "team", Missing: true},
	}
	var got struct {
		Rules []struct {
			Rule     string
			Tier     string
			Override bool
			Missing  bool `json:"missing_key"`
			Limits   []map[string]any
		}
	}
	b := AppendQuotaJSON(nil, rules)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if len(got.Rules) != 2 || got.Rules[0].Rule != rules[0].Name || got.Rules[0].Tier != "pro" || !got.Rules[0].Override || !got.Rules[1].Missing {
		t.Fatalf("%s read back as %+v", b, got)
	}
	l := got.Rules[0].Limits[0]
	if l["reset"] != 42.0 || l["retry_after"] != 0.0 || l["window"] != 60.0 || l["remaining"] != 97.0 {
		t.Errorf("limit %v", l)
	}
}
