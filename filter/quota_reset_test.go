package filter

import (
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
)

// A key never used has its whole quota, and a reset a client can rely on:
// what it spends now is back within it. The window of a sliding limit and
// of a funnel; the time left in its period for a calendar limit; 0 for a
// concurrency limit, which has no window (issue 30: it said 0 for all).
func TestQuotaEndpointResetOfAnUnusedKey(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"quota_endpoint":{"path":"/v1/quota"},"rules":[
	{"name":"chat","match":{"path_prefix":"/v1/chat"},"key":[{"source":"header","name":"x-key"}],
	 "limits":[{"name":"minute","algorithm":"sliding_counter","limit":5,"window":"1m"},
	           {"name":"hour","algorithm":"funnel","capacity":20,"rate":20,"period":"1h"},
	           {"name":"log","algorithm":"sliding_log","limit":5,"window":"10m"},
	           {"name":"month","algorithm":"calendar","limit":100,"period":"month","time_zone":"UTC"},
	           {"name":"slots","algorithm":"concurrency","limit":2,"max_duration":"1m"}]}]}`)
	now := time.Now()
	h.Clock = now
	r := h.request("GET", "/v1/quota", "x-key=never")
	if r.status != 200 || len(r.answer.Rules) != 1 || len(r.answer.Rules[0].Limits) != 5 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	cal, err := algorithms.NewCalendar(100, algorithms.Calendar{Unit: algorithms.Month, Zone: "UTC"})
	if err != nil {
		t.Fatal(err)
	}
	_, end, err := cal.Calendar.Bounds(now)
	if err != nil {
		t.Fatal(err)
	}
	monthLeft := int64((end.Sub(now) + time.Second - 1) / time.Second)
	want := map[string]int64{"minute": 60, "hour": 3600, "log": 600, "month": monthLeft, "slots": 0}
	for _, l := range r.answer.Rules[0].Limits {
		if l.Used != 0 || l.Remaining != l.Limit || l.Reset != want[l.Name] {
			t.Errorf("%s: used %d, remaining %d of %d, reset %d; want unused, reset %d", l.Name, l.Used, l.Remaining, l.Limit, l.Reset, want[l.Name])
		}
	}
}
