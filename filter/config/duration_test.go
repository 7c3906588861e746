package config

import (
	"testing"
	"time"
)

func TestParseDurationDaysAndWeeks(t *testing.T) {
	for s, want := range map[string]time.Duration{
		"1d": 24 * time.Hour, "2w": 14 * 24 * time.Hour, "1d12h": 36 * time.Hour, "1.5d": 36 * time.Hour,
		"+1d": 24 * time.Hour, "1w1d1h1m": 8*24*time.Hour + time.Hour + time.Minute, "90s": 90 * time.Second,
		"-1d": -24 * time.Hour, "0d": 0, "1h30m": 90 * time.Minute,
	} {
		got, err := ParseDuration(s)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"d", "1dd", "1 d", "1x", "1.5.d", "--1d", "1d-1h", "99999999999999d", "1e3d", "", "1day"} {
		if got, err := ParseDuration(s); err == nil {
			t.Errorf("ParseDuration(%q) = %v; want an error", s, got)
		}
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"1d", "2w3d4h", "1.5d", "1h", "-1w", "9999999d", "200ms", "0s", "007m", "2562047h", "2562048h",
		"9223372036854ms", "9223372036855ms", "999999999999999999s", "1000000000000000000ns", "5", "s", "1h30m", "+1s", "1µs"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		want, werr := time.ParseDuration(s)
		if werr == nil && (err != nil || d != want) {
			t.Fatalf("ParseDuration(%q) = %v, %v; time.ParseDuration gives %v", s, d, err, want)
		}
		// wholeUnits, the fast path, accepts nothing time.ParseDuration refuses.
		if w, ok := wholeUnits(s); ok && (werr != nil || w != want) {
			t.Fatalf("wholeUnits(%q) = %v; time.ParseDuration gives %v, %v", s, w, want, werr)
		}
	})
}

func TestWindowInDays(t *testing.T) {
	cfg, err := Parse([]byte(`{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"client_ip"}],` +
		`"limits":[{"algorithm":"sliding_counter","limit":1000,"window":"1d"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if w := cfg.Rules[0].Limits[0].Limit.Period; w != 24*time.Hour {
		t.Fatalf("window %v, want 24h", w)
	}
}
