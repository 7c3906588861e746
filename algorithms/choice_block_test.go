package algorithms

import (
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// A block stops a call whose every limit Redis picks (a rule with tiers or
// overrides and no other): the reply {now, pttl, i} has no results, and is
// parsed whole, not cut to the checks' part.
func TestBlockedCallWithOnlyChoices(t *testing.T) {
	var d Decision
	ch := []Choice{{Keys: []string{"k:0"}, Tiers: []Tier{{Name: "free", Limits: []Limit{mustLimit(t)(NewSlidingLog(2, time.Hour))}}}}}
	if err := d.FromIntsCall([]int64{1700000000000000, 1500, 1}, 1, 0, ch); err != nil || !d.Blocked || d.BlockedBy != 0 ||
		d.BlockedFor != 1500*time.Millisecond || len(d.Picks) != 0 {
		t.Fatalf("blocked for 1.5 s: %v, %+v", err, d)
	}
	if err := d.FromIntsCall([]int64{1700000000000000, -1, 1}, 1, 0, ch); err != nil || !d.Blocked || d.BlockedFor != -1 {
		t.Fatalf("blocked with no TTL: %v, %+v", err, d)
	}
	if err := d.FromIntsCall([]int64{1700000000000000, 1500}, 1, 0, ch); err == nil {
		t.Fatalf("a blocked reply without its block's index: %+v", d)
	}

	c := dial(t)
	base := redistest.Prefix(t) + "{u}"
	c.do("SET", base+":block", "1", "PX", "60000")
	ch[0].Keys, ch[0].TierKey, ch[0].OverrideKey = []string{base + ":0"}, base+":tier", base+":override"
	got := c.decideCall(base+":block", nil, ch)
	if !got.Blocked || got.BlockedBy != 0 || got.BlockedFor <= 59*time.Second || got.BlockedFor > time.Minute || got.Allowed() {
		t.Fatalf("the script's reply to a blocked key: %+v", got)
	}
}
