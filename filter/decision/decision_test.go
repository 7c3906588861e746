package decision

import "testing"

// Each field appears only when it applies, in the documented order.
func TestAppendWritesOnlyFieldsThatApply(t *testing.T) {
	for _, tc := range []struct {
		line Line
		want string
	}{
		{Line{Rule: "api", Limit: "per-second", Remaining: 0, Kind: Denied, Reason: "rate_limited"},
			"rule=api limit=per-second remaining=0 decision=denied reason=rate_limited"},
		{Line{Rule: "api", Limit: "per-second", Remaining: -1, Kind: Denied, Reason: "blocked", From: FromDenyCache},
			"rule=api limit=per-second decision=denied reason=blocked from=deny_cache"},
		{Line{Rule: "audit", Remaining: -1, Kind: Allowed, Shadow: true},
			"rule=audit decision=allowed shadow=true"},
		{Line{Remaining: -1, Kind: Allowed, Reason: "ratelimit_unavailable", From: FromLocal},
			"decision=allowed reason=ratelimit_unavailable from=local"},
	} {
		if got := string(Append(nil, &tc.line)); got != tc.want {
			t.Errorf("%+v:\n got %q\nwant %q", tc.line, got, tc.want)
		}
	}
	b := make([]byte, 0, 128)
	l := Line{Rule: "api", Limit: "minute", Remaining: 7, Kind: WouldDeny, Reason: "rate_limited"}
	if n := testing.AllocsPerRun(100, func() { b = Append(b[:0], &l) }); n != 0 {
		t.Errorf("%v allocations appending to a grown buffer, want 0", n)
	}
}
