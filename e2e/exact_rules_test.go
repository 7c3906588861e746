package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// TestRulesChargeOnlyWhenAllAdmit: rule "user" (5 per user) and rule
// "global" (30 for all) match every request and share one call. A request
// either rule denies charges neither: first the per-user rule binds (4
// users send 12 each: 20 admitted, and the global log holds exactly those
// 20), then the global rule binds (10 new users send 5 each, within their
// own limit, and only the global rule's last 10 are admitted: each user's
// log holds exactly what that user had admitted).
func TestRulesChargeOnlyWhenAllAdmit(t *testing.T) {
	prefix := redistest.Prefix(t)
	rec := newRecorder(t)
	h := startBuild(t, "higress", wasmhost.Config{Workers: 4, Upstream: rec.URL, PauseTimeout: exactPauseGuard}, exactConfig(prefix, `[
			{"name":"user","key":[{"source":"query","name":"u"}],"limits":[{"algorithm":"sliding_log","limit":5,"window":"1m"}]},
			{"name":"global","key":[{"source":"constant","value":"all"}],"limits":[{"algorithm":"sliding_log","limit":30,"window":"1m"}]}]`), server.Addr).h
	zcard := func(tag string) int {
		n, err := server.Client.Int("ZCARD", prefix+"{"+tag+"}:0")
		if err != nil {
			t.Fatal(err)
		}
		return int(n)
	}
	// burst sends each user's requests, all users at once, and returns the
	// deniers named in the 429 bodies.
	burst := func(users []string, each int) map[string]int {
		var mu sync.Mutex
		deniedBy := map[string]int{}
		var failed problems
		var wg sync.WaitGroup
		for _, u := range users {
			for range each {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, err := http.Get(h.URL() + "/multi?u=" + u)
					if err != nil {
						failed.add("%v", err)
						return
					}
					defer resp.Body.Close()
					var body strings.Builder
					io.Copy(&body, resp.Body)
					switch resp.StatusCode {
					case 200:
					case 429:
						rule := "?"
						if _, after, ok := strings.Cut(body.String(), `"rule":"`); ok {
							rule, _, _ = strings.Cut(after, `"`)
						}
						mu.Lock()
						deniedBy[rule]++
						mu.Unlock()
					default:
						failed.add("status %d: %s", resp.StatusCode, body.String())
					}
				}()
			}
		}
		wg.Wait()
		failed.check(t)
		return deniedBy
	}
	names := func(p string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("%s%d", p, i))
		}
		return out
	}

	// The per-user rule binds.
	a := names("a", 4)
	if d := burst(a, 12); d["user"] != 4*7 || len(d) != 1 {
		t.Fatalf("phase 1 denials by rule: %v; want user: 28", d)
	}
	for _, u := range a {
		if got, logged := rec.users()[u], zcard("user|"+u); got != 5 || logged != 5 {
			t.Fatalf("user %s: %d admitted, %d in its log; want 5, 5", u, got, logged)
		}
	}
	if g := zcard("global|all"); g != 20 {
		t.Fatalf("global log holds %d after 20 admitted: a request the user rule denied charged it", g)
	}

	// The global rule binds.
	b := names("b", 10)
	if d := burst(b, 5); d["global"] != 40 || len(d) != 1 {
		t.Fatalf("phase 2 denials by rule: %v; want global: 40", d)
	}
	total := 0
	for _, u := range b {
		got, logged := rec.users()[u], zcard("user|"+u)
		if got != logged {
			t.Fatalf("user %s: %d admitted but %d in its log: a request the global rule denied charged it", u, got, logged)
		}
		total += got
	}
	if g := zcard("global|all"); total != 10 || g != 30 {
		t.Fatalf("phase 2: %d admitted, global log %d; want 10, 30", total, g)
	}
	t.Logf("several rules: %d requests; user rule binding: 20 admitted, global charged 20; global rule binding: 10 admitted, users charged 10", 4*12+10*5)
}
