package e2e

// Hostile input: JSON nested far deeper than anything legitimate, in a
// bearer token, a request body, a JSON response and an event stream,
// through both builds in the host.

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/deepjson"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// nestRules: a bearer token's claim keys rule jwt, which denies a request
// without it; rule body reserves 7 and settles the usage of the JSON or
// event-stream response. (The host holds a request body behind paused
// headers, as Envoy does by default, so the reservation is never read
// from one here: e2e/v8 and the filter's tests send deep request bodies.)
const nestRules = `[
	{"name":"jwt","match":{"path_prefix":"/jwt"},"key":[{"source":"jwt_claim","name":"sub"}],"on_missing_key":"deny",
	 "limits":[{"algorithm":"sliding_log","limit":1000,"window":"1m"}]},
	{"name":"body","match":{"path_prefix":"/body"},"key":[{"source":"header","name":"x-user"}],
	 "limits":[{"algorithm":"sliding_log","limit":1000,"window":"1m"}],
	 "response_cost":{"usage":"openai_chat","reserve":7}}]`

// nestUsage is a response's usage: 1 + 2 tokens.
const nestUsage = `"usage":{"prompt_tokens":1,"completion_tokens":2}`

// nestMemoryGrowth bounds how much the VM's memory may grow over the deep
// requests, beyond what shallow requests of the same sizes took.
const nestMemoryGrowth = 2 << 20

// nestUpstream answers each request with the body set for it: JSON under
// /body/json, an event stream under /body/sse.
type nestUpstream struct {
	*httptest.Server
	mu   sync.Mutex
	next string
}

func newNestUpstream(t *testing.T) *nestUpstream {
	u := &nestUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		u.mu.Lock()
		body := u.next
		u.mu.Unlock()
		w.Header().Set("content-type", "application/json")
		if strings.HasPrefix(r.URL.Path, "/body/sse") {
			w.Header().Set("content-type", "text/event-stream")
		}
		io.WriteString(w, body)
	}))
	t.Cleanup(u.Close)
	return u
}

// Neither build traps on JSON nested up to 500,000 deep (1 MB), in arrays,
// objects or both: a deep token's claim is missing (on_missing_key deny:
// 400), a deep JSON response or event has no usage (usage_missing). Shallow requests of the
// same sizes before them are read as usual, and the deep ones grow the
// VM's memory by less than nestMemoryGrowth.
func TestDeepJSON(t *testing.T) {
	for _, kind := range moduleKinds {
		t.Run(kind, func(t *testing.T) {
			up := newNestUpstream(t)
			config := fmt.Sprintf(`{"redis":{"cluster":"redis","key_prefix":%q,"timeout":"2s"},"rules":%s}`, redistest.Prefix(t), nestRules)
			h := startBuild(t, kind, wasmhost.Config{Workers: 1, Upstream: up.URL, MaxBodyBytes: 2 << 20}, config, server.Addr).h
			slowest := map[string]time.Duration{}
			user := 0
			// do sends one request and checks its status and RateLimit.
			do := func(what, path, auth, respBody string, status int, ratelimit string) {
				t.Helper()
				up.mu.Lock()
				up.next = respBody
				up.mu.Unlock()
				user++
				req, _ := http.NewRequest("GET", h.URL()+path, nil)
				req.Header.Set("x-user", fmt.Sprint("u", user))
				if auth != "" {
					req.Header.Set("authorization", auth)
				}
				began := time.Now()
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				spent := time.Since(began)
				if kind := what[:strings.IndexByte(what, ' ')]; spent > slowest[kind] {
					slowest[kind] = spent
				}
				if got := resp.Header.Get("ratelimit"); resp.StatusCode != status || got != ratelimit ||
					status == 400 && !strings.Contains(string(body), "missing_key") {
					t.Errorf("%s: status %d, RateLimit %q, body %.80q; want %d, %q", what, resp.StatusCode, got, body, status, ratelimit)
				}
			}
			pad := `"pad":"` + strings.Repeat("p", 1<<20-100) + `"`
			const shallow = 2
			for i := range shallow {
				do("warm jwt", "/jwt", deepjson.Bearer(fmt.Sprintf(`{"sub":"x%d"}`, i)), "", 200, `"jwt";r=999;t=60`)
				do("warm json", "/body/json", "", `{`+nestUsage+`,`+pad+`}`, 200, `"body";r=993;t=60`)
				do("warm sse", "/body/sse", "", "data: {"+nestUsage+","+pad+"}\n\ndata: [DONE]\n\n", 200, `"body";r=993;t=60`)
			}
			waitFor(t, "the shallow responses to settle", func() bool {
				n, _ := h.Metric("ratelimit.rule.body.units_refunded")
				return n == 2*4*shallow // 7 reserved, 3 used
			})
			before := h.MemoryPerVM()[0]
			deep := 0
			for _, shape := range deepjson.Shapes {
				for _, depth := range []int{1000, 9000, 100_000} {
					auth := deepjson.Bearer(`{"sub":"x","z":` + deepjson.Nest(shape, depth, "0") + `}`)
					do(fmt.Sprintf("jwt %s %d deep", shape, depth), "/jwt", auth, "", 400, "")
				}
				for _, depth := range []int{1000, 10_000, 100_000, deepjson.DepthFor(shape, 1<<20-100)} {
					doc := deepjson.Nest(shape, depth, "0")
					do(fmt.Sprintf("json %s %d deep", shape, depth), "/body/json", "", `{`+nestUsage+`,"z":`+doc+`}`, 200, `"body";r=993;t=60`)
					do(fmt.Sprintf("sse %s %d deep", shape, depth), "/body/sse", "", "data: {"+nestUsage+`,"z":`+doc+"}\n\ndata: [DONE]\n\n", 200, `"body";r=993;t=60`)
					deep += 2
				}
			}
			waitFor(t, "every deep response to settle", func() bool {
				n, _ := h.Metric("ratelimit.rule.body.usage_missing")
				return n >= int64(deep)
			})
			if n, _ := h.Metric("ratelimit.rule.body.usage_missing"); n != int64(deep) {
				t.Errorf("usage_missing = %d, want %d", n, deep)
			}
			after := h.MemoryPerVM()[0]
			t.Logf("%s: VM memory %d KiB after the shallow requests, %d KiB after %d deep ones; slowest request: %v",
				kind, before>>10, after>>10, 9+deep, slowest)
			if after-before >= nestMemoryGrowth {
				t.Errorf("VM memory grew by %d KiB over the deep requests, want < %d KiB", (after-before)>>10, nestMemoryGrowth>>10)
			}
		})
	}
}
