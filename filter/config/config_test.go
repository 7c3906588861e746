package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
)

// Every fixture in testdata/invalid fails with exactly the message in its
// .error file.
func TestInvalidConfigFixtures(t *testing.T) {
	files := fixtures(t, "testdata/invalid/*.json")
	if len(files) < 40 {
		t.Fatalf("found %d fixtures", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			data := readFixture(t, f)
			want := readFixture(t, strings.TrimSuffix(f, ".json")+".error")
			_, err := Parse(data)
			if err == nil || err.Error() != strings.TrimSpace(string(want)) {
				t.Fatalf("got  %v\nwant %s", err, want)
			}
		})
	}
}

func TestValidConfigFixtures(t *testing.T) {
	for _, f := range fixtures(t, "testdata/valid/*.json") {
		if _, err := Parse(readFixture(t, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// fixtures returns the files matching pattern, failing the test when
// there are none: a test that finds no fixtures proves nothing.
func fixtures(t testing.TB, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures match %s (%v)", pattern, err)
	}
	return files
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseConfigDefaultsAndValues(t *testing.T) {
	minimal := `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"client_ip"}],"limits":[{"algorithm":"sliding_log","limit":5,"window":"1s"}]}]}`
	c, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if !c.FailOpen || c.FailureStatus != 503 || c.RejectStatus != 429 || c.Headers != HeadersDraft10 ||
		c.Redis.Timeout != 200*time.Millisecond || c.Redis.Prefix != "rl:" || c.Redis.Database != 0 || c.TrustedHops != 0 || c.NearLimitRatio != 800_000 || !c.DecisionState {
		t.Fatalf("defaults: %+v", c)
	}
	r := c.Rules[0]
	if r.OnMissing != MissingSkip || r.Cost.Default != 1 || r.Shadow || r.Limits[0].Name != "r" {
		t.Fatalf("rule defaults: %+v", r)
	}

	c, err = Parse(readFixture(t, "testdata/valid/everything.json"))
	if err != nil {
		t.Fatal(err)
	}
	up := c.Rules[0]
	tb, _ := algorithms.TokenBucket(100, 10, time.Second)
	if c.FailOpen || !c.Redis.ClusterMode || c.Redis.Database != 2 || c.TrustedHops != 1 || c.NearLimitRatio != 900_000 || c.DecisionState ||
		up.OnMissing != MissingShared || up.Cost.Header != "x-upload-units" || up.Limits[0].Limit != tb ||
		up.Limits[0].Name != "uploads.0" || up.Match.Hosts[0] != "api.example.com" || len(up.Key) != 4 {
		t.Fatalf("everything: %+v", c)
	}
	strict := c.Rules[1]
	if strict.Key[0].Name != "x-api-key" || strict.OnMissing != MissingDeny || strict.Cost.Default != 0 {
		t.Fatalf("strict: %+v", strict)
	}
}

func TestDuplicateFieldRejected(t *testing.T) {
	_, err := Parse([]byte(`{"redis":{"cluster":"a","cluster":"b"},"rules":[]}`))
	if err == nil || err.Error() != "redis.cluster: duplicate field" {
		t.Fatalf("got %v", err)
	}
}

func TestManualBlockOption(t *testing.T) {
	rule := func(extra string) string {
		return `{"redis":{"cluster":"redis"},"rules":[{"name":"a","key":[{"source":"client_ip"}],"limits":[{"algorithm":"funnel","capacity":5,"rate":1,"period":"1s"}]},
			{"name":"b","key":[{"source":"client_ip"}],"limits":[{"algorithm":"funnel","capacity":5,"rate":1,"period":"1s"}]` + extra + `}]}`
	}
	for extra, want := range map[string]bool{"": true, `,"manual_block":true`: true, `,"manual_block":false`: false} {
		c, err := Parse([]byte(rule(extra)))
		if err != nil {
			t.Fatalf("%q: %v", extra, err)
		}
		if !c.Rules[0].ManualBlock || c.Rules[1].ManualBlock != want {
			t.Fatalf("%q: manual_block %t, %t; want true, %t", extra, c.Rules[0].ManualBlock, c.Rules[1].ManualBlock, want)
		}
	}
	for _, bad := range []string{`"false"`, `0`, `null`, `{}`} {
		_, err := Parse([]byte(rule(`,"manual_block":` + bad)))
		if err == nil || err.Error() != "rules[1].manual_block: must be true or false" {
			t.Errorf("manual_block %s: %v", bad, err)
		}
	}
}

// response_cost.max_cost defaults to the largest capacity of the rule's
// limits, over every tier; a set value is kept.
func TestResponseMaxCostDefault(t *testing.T) {
	c, err := Parse(readFixture(t, "testdata/valid/calendar.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Rules[0].Response.MaxCost; got != 500000000 {
		t.Errorf("max_cost %d, want 500000000, the enterprise tier's limit", got)
	}
	c, err = Parse([]byte(`{"redis":{"cluster":"r"},"rules":[{"name":"a","key":[{"source":"header","name":"x"}],
		"limits":[{"algorithm":"sliding_log","limit":10,"window":"1m"},{"algorithm":"funnel","capacity":30,"rate":1,"period":"1s"}],
		"response_cost":{"header":"x-used"}},{"name":"b","key":[{"source":"header","name":"x"}],
		"limits":[{"algorithm":"sliding_log","limit":10,"window":"1m"}],"response_cost":{"header":"x-used","max_cost":7}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := c.Rules[0].Response.MaxCost, c.Rules[1].Response.MaxCost; a != 30 || b != 7 {
		t.Errorf("max_cost %d and %d, want 30 (the funnel's capacity) and 7", a, b)
	}
}
