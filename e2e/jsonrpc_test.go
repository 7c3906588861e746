package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// Issue 33's proof end to end, in both builds: JSON-RPC batches through
// wasmhost, charged per call, refused whole, in the protocol's words.

// rpcRules: on /rpc, each method per user from a table (eth_call 1,
// eth_getLogs 5, eth_chainId free of charge), a token bucket of 150; on
// /mcp (MCP: refusals are JSON-RPC errors), each tool per user, 3 an hour.
const rpcRules = `{"name":"rpc","match":{"path":"/rpc"},"key":[{"source":"header","name":"x-user"},{"source":"call","path":"method"}],
	 "jsonrpc":{"max_calls":200},"cost":{"methods":{"eth_getLogs":5,"eth_chainId":0},"default":1},
	 "limits":[{"algorithm":"token_bucket","capacity":150,"refill":1,"period":"1h"}]},
	{"name":"tools","match":{"path":"/mcp","call":[{"path":"method","exact":"tools/call"}]},
	 "key":[{"source":"header","name":"x-user"},{"source":"call","path":"params.name"}],
	 "jsonrpc":{"protocol":"mcp"},"limits":[{"name":"per-hour","algorithm":"sliding_log","limit":3,"window":"1h"}]}`

// rpcUpstream records every body it receives and answers JSON, or, with
// x-sse: 1, an event stream whose second event waits for release.
type rpcUpstream struct {
	*httptest.Server
	mu      sync.Mutex
	bodies  []string
	release chan struct{}
}

func newRPCUpstream(t *testing.T) *rpcUpstream {
	u := &rpcUpstream{release: make(chan struct{})}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.bodies = append(u.bodies, string(b))
		u.mu.Unlock()
		if r.Header.Get("x-sse") != "1" {
			w.Header().Set("content-type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
			return
		}
		w.Header().Set("content-type", "text/event-stream")
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"progress\":1}}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-u.release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"done\":true}}\n\n")
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *rpcUpstream) received() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.bodies)
}

// postRPC posts body as user and returns the response, its body read.
func postRPC(t *testing.T, url, user, body string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("x-user", user)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// rpcBatch is a batch of n calls over methods in turn, ids 0..n-1 but
// every seventh call a notification.
func rpcBatch(n int, methods ...string) string {
	var calls []string
	for i := range n {
		id := fmt.Sprintf(`"id":%d,`, i)
		if i%7 == 6 {
			id = ""
		}
		calls = append(calls, fmt.Sprintf(`{"jsonrpc":"2.0",%s"method":%q,"params":[]}`, id, methods[i%len(methods)]))
	}
	return "[" + strings.Join(calls, ",") + "]"
}

// redisState lists every key under prefix with its DUMP, sorted: two
// equal states hold the same limits, charged the same.
func redisState(t *testing.T, prefix string) []string {
	t.Helper()
	v, err := server.Do("EVAL", `local keys, cur = {}, "0"
repeat
  local r = redis.call("SCAN", cur, "MATCH", ARGV[1], "COUNT", 1000)
  cur = r[1]
  for _, k in ipairs(r[2]) do keys[#keys + 1] = k end
until cur == "0"
table.sort(keys)
local out = {}
for _, k in ipairs(keys) do out[#out + 1] = k; out[#out + 1] = redis.call("DUMP", k) end
return out`, 0, prefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range v.([]any) {
		out = append(out, e.(string))
	}
	return out
}

// stateKeys is the keys of a redisState.
func stateKeys(state []string) []string { return rpcKeys(state, "") }

// rpcKeys is the keys of a redisState that hold tag.
func rpcKeys(state []string, tag string) []string {
	var keys []string
	for i := 0; i < len(state); i += 2 {
		if strings.Contains(state[i], tag) {
			keys = append(keys, state[i])
		}
	}
	return keys
}

// A 100-call batch over 8 methods reaches the upstream byte for byte and
// charges one key per charged method; a batch one of whose keys is spent
// is refused (429), never reaches the upstream and charges nothing; a
// batch past max_calls is 413.
func TestJSONRPCBatchThroughBuilds(t *testing.T) {
	methods := []string{"eth_call", "eth_getBalance", "eth_blockNumber", "eth_getLogs", "eth_chainId", "net_version", "eth_gasPrice", "eth_getCode"}
	for _, kind := range moduleKinds {
		t.Run(kind, func(t *testing.T) {
			up := newRPCUpstream(t)
			prefix := redistest.Prefix(t)
			h := startBuild(t, kind, wasmhost.Config{Upstream: up.URL}, llmConfig(prefix, rpcRules), server.Addr).h
			batch := rpcBatch(100, methods...)
			if resp, body := postRPC(t, h.URL()+"/rpc", "alice", batch); resp.StatusCode != 200 {
				t.Fatalf("100 calls: %d %s; want 200", resp.StatusCode, body)
			}
			if got := up.received(); len(got) != 1 || got[0] != batch {
				t.Fatalf("upstream received %d bodies; want the batch, byte-identical", len(got))
			}
			var want []string
			for _, m := range methods {
				if m != "eth_chainId" { // costs 0: no key
					want = append(want, prefix+"{rpc|alice}|"+m+"}:0")
				}
			}
			if got := rpcKeys(redisState(t, prefix), "{rpc|alice}"); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
				t.Fatalf("keys %q; want one per charged method %q", got, want)
			}

			// 100 eth_call of bob's 150, then 60 more beside 10 of a
			// method not charged yet: refused whole.
			if resp, body := postRPC(t, h.URL()+"/rpc", "bob", rpcBatch(100, "eth_call")); resp.StatusCode != 200 {
				t.Fatalf("bob's 100: %d %s", resp.StatusCode, body)
			}
			before := redisState(t, prefix)
			refused := rpcBatch(70, "eth_call", "eth_call", "eth_call", "eth_call", "eth_call", "eth_call", "web3_sha3")
			resp, body := postRPC(t, h.URL()+"/rpc", "bob", refused)
			if resp.StatusCode != 429 || !strings.Contains(body, `"rule":"rpc"`) {
				t.Fatalf("bob's 70: %d %s; want 429 from rule rpc", resp.StatusCode, body)
			}
			if after := redisState(t, prefix); !slices.Equal(before, after) {
				t.Fatalf("the refused batch changed Redis:\nbefore %q\nafter  %q", stateKeys(before), stateKeys(after))
			}
			if resp, body := postRPC(t, h.URL()+"/rpc", "alice", rpcBatch(201, "eth_call")); resp.StatusCode != 413 {
				t.Fatalf("201 calls: %d %s; want 413, past max_calls", resp.StatusCode, body)
			}
			if got := up.received(); len(got) != 2 {
				t.Fatalf("upstream received %d bodies; want 2, the refused batches not among them", len(got))
			}
		})
	}
}

// rpcError is one JSON-RPC error object of a refusal.
type rpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Reason     string `json:"reason"`
			Rule       string `json:"rule"`
			Limit      string `json:"limit"`
			RetryAfter int64  `json:"retry_after"`
			Call       *int   `json:"call"`
		} `json:"data"`
	} `json:"error"`
}

// MCP refusals in the protocol's words, in both builds: a refused batch
// is answered 200 with an error object per request, ids as written and
// in order (free calls included, notifications and responses none); a
// refused batch of notifications only is 429; an admitted call answered
// as an event stream reaches the client event by event.
func TestJSONRPCRefusalsThroughBuilds(t *testing.T) {
	call := func(id, tool string) string {
		if id != "" {
			id = `"id":` + id + `,`
		}
		return `{"jsonrpc":"2.0",` + id + `"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
	}
	for _, kind := range moduleKinds {
		t.Run(kind, func(t *testing.T) {
			up := newRPCUpstream(t)
			h := startBuild(t, kind, wasmhost.Config{Upstream: up.URL}, llmConfig(redistest.Prefix(t), rpcRules), server.Addr).h
			url := h.URL() + "/mcp"
			three := "[" + call("1", "search") + "," + call(`"two"`, "search") + "," + call("null", "search") + "]"
			if resp, body := postRPC(t, url, "carol", three); resp.StatusCode != 200 || strings.Contains(body, `"error"`) {
				t.Fatalf("3 searches: %d %s; want the upstream's 200", resp.StatusCode, body)
			}
			ids := []string{"7", `"p"`, "1.50", "1152921504606846976"}
			batch := "[" + call(ids[0], "fetch") + `,{"jsonrpc":"2.0","method":"notifications/progress"},` +
				`{"jsonrpc":"2.0","id":` + ids[1] + `,"method":"ping"},` + call(ids[2], "search") + "," +
				`{"jsonrpc":"2.0","id":99,"result":{}},` + call(ids[3], "fetch") + "]"
			resp, body := postRPC(t, url, "carol", batch)
			var objs []rpcError
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("content-type"), "application/json") || json.Unmarshal([]byte(body), &objs) != nil {
				t.Fatalf("the 4th search: %d %q %s; want 200 and an array of error objects", resp.StatusCode, resp.Header.Get("content-type"), body)
			}
			if len(objs) != len(ids) {
				t.Fatalf("%d error objects; want %d, one per request: %s", len(objs), len(ids), body)
			}
			for i, o := range objs {
				e := o.Error
				if string(o.ID) != ids[i] || o.JSONRPC != "2.0" || e.Code != -32005 || e.Data.Reason != "rate_limited" ||
					e.Data.Rule != "tools" || e.Data.Limit != "per-hour" || e.Data.RetryAfter < 1 || e.Data.Call == nil || *e.Data.Call != 3 {
					t.Fatalf("error object %d: %+v; want id %s, code -32005, rate_limited by tools' per-hour, call 3: %s", i, o, ids[i], body)
				}
			}
			if resp.Header.Get("retry-after") == "" {
				t.Errorf("no Retry-After on the refusal")
			}
			resp, body = postRPC(t, url, "carol", "["+call("", "search")+","+call("", "search")+"]")
			if resp.StatusCode != 429 || !strings.Contains(body, `"id":null`) {
				t.Fatalf("notifications only: %d %s; want 429 with an id-null error object", resp.StatusCode, body)
			}
			if got := len(up.received()); got != 1 {
				t.Fatalf("upstream received %d bodies; want only the first batch", got)
			}
			sseThrough(t, up, url)
		})
	}
}

// sseThrough posts an admitted call whose answer is an event stream and
// reads its first event while the upstream holds the second.
func sseThrough(t *testing.T, up *rpcUpstream, url string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"deep"}}`))
	req.Header.Set("x-user", "dave")
	req.Header.Set("x-sse", "1")
	req.Header.Set("accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("content-type") != "text/event-stream" || resp.Header.Get("ratelimit") == "" {
		t.Fatalf("SSE: %d %q, RateLimit %q; want 200, text/event-stream, with rate-limit headers", resp.StatusCode, resp.Header.Get("content-type"), resp.Header.Get("ratelimit"))
	}
	first := make(chan string, 1)
	rd := bufio.NewReader(resp.Body)
	go func() {
		var ev strings.Builder
		for {
			line, err := rd.ReadString('\n')
			ev.WriteString(line)
			if err != nil || line == "\n" {
				first <- ev.String()
				return
			}
		}
	}()
	select {
	case ev := <-first:
		if !strings.Contains(ev, `"progress":1`) {
			t.Fatalf("first event %q", ev)
		}
	case <-time.After(waitGuard):
		t.Fatalf("no event within %v while the upstream holds the rest: the stream is buffered", waitGuard)
	}
	close(up.release)
	rest, _ := io.ReadAll(rd)
	if !strings.Contains(string(rest), `"done":true`) {
		t.Fatalf("rest of the stream %q", rest)
	}
}
