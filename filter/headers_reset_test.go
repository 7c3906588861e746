package filter

import (
	"strings"
	"testing"
)

// A funnel of capacity 2 at 2 per hour leaks one unit every 30 minutes:
// after two requests the next unit frees in 1800 s and the funnel is empty
// in 3600 s. A denial's RateLimit t and X-RateLimit-Reset are the time to
// the next admission, its Retry-After (1800), not the time to full (3600);
// an admission's are the time to full: 1800 after the first request.
func TestResetHeadersOnDenialAreRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		style       string
		want        map[string]string // on the third request's 429
		wantFirst   map[string]string // on the first request's 200
		absentOn429 []string
	}{
		{"draft10",
			map[string]string{"retry-after": "1800", "ratelimit": `"hourly";r=0;t=1800`},
			map[string]string{"ratelimit": `"hourly";r=1;t=1800`},
			[]string{"x-ratelimit-reset"}},
		{"legacy",
			map[string]string{"retry-after": "1800", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "1800"},
			map[string]string{"x-ratelimit-remaining": "1", "x-ratelimit-reset": "1800"},
			[]string{"ratelimit"}},
		{"both",
			map[string]string{"retry-after": "1800", "ratelimit": `"hourly";r=0;t=1800`, "x-ratelimit-reset": "1800"},
			map[string]string{"ratelimit": `"hourly";r=1;t=1800`, "x-ratelimit-reset": "1800"},
			nil},
	} {
		t.Run(tc.style, func(t *testing.T) {
			h := newFakeHost(t, `{"redis":{"cluster":"redis"},"headers":"`+tc.style+`","rules":[{"name":"r",
				"key":[{"source":"header","name":"x-user"}],
				"limits":[{"name":"hourly","algorithm":"funnel","capacity":2,"rate":2,"period":"1h"}]}]}`)
			first := h.send("x-user=a")
			if first.status != 200 {
				t.Fatalf("first request: %+v", first)
			}
			wantHeaders(t, "first request's 200", first.headers, tc.wantFirst)
			if o := h.send("x-user=a"); o.status != 200 {
				t.Fatalf("second request: %+v", o)
			}
			// The third is denied by Redis, the fourth by the deny cache:
			// both render the same times.
			for _, which := range []string{"third request's 429 (Redis)", "fourth request's 429 (deny cache)"} {
				o := h.send("x-user=a")
				if o.status != 429 {
					t.Fatalf("%s: %+v", which, o)
				}
				wantHeaders(t, which, o.headers, tc.want)
				for _, name := range tc.absentOn429 {
					if v, ok := o.headers[name]; ok {
						t.Errorf("%s: %s: %q, want none with headers %q", which, name, v, tc.style)
					}
				}
				if !strings.Contains(o.body, `"retry_after":1800`) {
					t.Errorf("%s: body %s, want retry_after 1800", which, o.body)
				}
			}
		})
	}
}

// wantHeaders checks that got holds every header of want, with its value.
func wantHeaders(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s: %s: %q, want %q (all: %q)", what, name, got[name], v, got)
		}
	}
}
