package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
	"github.com/redisrate/envoy-redis-ratelimit/internal/dist"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// The built-in upstream's chat completions settle a response_cost rule
// through the command, the Higress build and a real Redis: a request
// reserving 400 output tokens (x-max-tokens) and its body's size in input
// tokens (4 bytes a token), with max_tokens 400 and a 2-word message, is
// charged the echo's usage, 2 + 400 = 402, as JSON and as a stream whose
// last chunk carries the usage: the settle refunds the rest.
func TestEchoChatSettlesResponseCost(t *testing.T) {
	srv := redistest.Start(t)
	data := fmt.Sprintf(`{"redis": {"cluster": "redis", "key_prefix": %q, "timeout": "2s"},
	 "rules": [{"name": "llm", "key": [{"source": "header", "name": "x-user"}],
	            "limits": [{"name": "tokens", "algorithm": "sliding_log", "limit": 1000, "window": "1m"}],
	            "response_cost": {"usage": "openai_chat", "reserve": {"header": "x-max-tokens", "default": 500}}}]}`, redistest.Prefix(t))
	cfg, err := config.Parse([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	r := startCmd(t, "-wasm", distPath(t, dist.Higress), "-config", writeFile(t, "plugin.json", data), "-redis", srv.Addr)

	refunded := int64(0)
	for _, tc := range []struct{ user, extra string }{
		{"json", ``},
		{"stream", `"stream": true, "stream_options": {"include_usage": true}, `},
	} {
		body := `{"model": "m", ` + tc.extra + `"max_tokens": 400, "messages": [{"role": "user", "content": "hello there"}]}`
		rep := get(t, r.url+"/v1/chat/completions", body, map[string]string{"x-user": tc.user, "x-max-tokens": "400"})
		reserved := 400 + (len(body)+3)/4
		if want := fmt.Sprintf(`"tokens";r=%d;`, 1000-reserved); rep.status != 200 || !strings.Contains(rep.header.Get("RateLimit"), want) {
			t.Fatalf("%s: status %d, RateLimit %q; want 200 with %s (1000 - %d reserved)", tc.user, rep.status, rep.header.Get("RateLimit"), want, reserved)
		}
		if tc.user == "stream" && !strings.HasSuffix(rep.body, `"total_tokens":402}}`+"\n\ndata: [DONE]\n\n") {
			t.Fatalf("stream: body ends %q", rep.body[max(0, len(rep.body)-120):])
		}
		// The settle refunds what the reservation held over 402; its reply
		// counts them.
		refunded += int64(reserved - 402)
		waitCharged(t, r, "ratelimit.rule.llm.units_refunded", refunded)
		if used := peekUsed(t, srv, cfg, tc.user); used != 402 {
			t.Errorf("%s: used %d after the response; want 402 (the echo's usage, settled), not %d (the reservation)", tc.user, used, reserved)
		}
	}
}

// waitCharged waits until the counter reaches want, then requires it
// equal. The guard only stops a test that would hang.
func waitCharged(t *testing.T, r *running, name string, want int64) {
	t.Helper()
	got, _ := r.app.host.Metric(name)
	for deadline := time.Now().Add(30 * time.Second); got < want; got, _ = r.app.host.Metric(name) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s to reach %d (now %d)", name, want, got)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got != want {
		t.Fatalf("%s = %d, want %d", name, got, want)
	}
}

// peekUsed reads the tokens used by a user's key, charging nothing.
func peekUsed(t *testing.T, srv *redistest.Server, cfg *config.Config, user string) int64 {
	t.Helper()
	rule := &cfg.Rules[0]
	base, err := keyspace.RuleKey(cfg, rule, []string{user})
	if err != nil {
		t.Fatal(err)
	}
	pk, err := keyspace.NewPeek(cfg, rule, base, "")
	if err != nil {
		t.Fatal(err)
	}
	v, err := srv.Do(pk.Args(algorithms.FCall)...)
	if err != nil {
		t.Fatal(err)
	}
	var ints []int64
	for _, x := range v.([]any) {
		ints = append(ints, x.(int64))
	}
	ks, err := pk.Decode(ints)
	if err != nil || len(ks.Limits) != 1 {
		t.Fatalf("peek: %+v, %v", ks, err)
	}
	return ks.Limits[0].Used
}
