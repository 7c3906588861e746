package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// The token phase: one API key sends chat requests, some streamed, until
// the "tokens" rule of config.json denies. Each request reserves its
// x-max-tokens (300 without it) and its input, the body's bytes over 4, at
// admission; when the response ends, the filter charges what its usage
// says instead, in one more script call.

const (
	apiKey      = "team-a"
	tokenRule   = "tokens"       // the response_cost rule in config.json
	tokenLimit  = 2000           // its limit, per minute
	requestRule = "api-requests" // requests per second on the same key
	settleWait  = 2 * time.Second
)

// chatTurn is one request of the token phase.
type chatTurn struct {
	prompt    string
	stream    bool
	maxTokens int64 // sent as max_tokens and x-max-tokens when > 0
}

// The turns, sent in order until one is denied. The upstream answers each
// with as many tokens as its prompt asks for, at most max_tokens.
var turns = []chatTurn{
	{prompt: "Say hello, in about 100 tokens."},
	{prompt: "Write a short poem about Redis, about 450 tokens.", stream: true},
	{prompt: "Explain a sliding log in about 700 tokens.", maxTokens: 800},
	{prompt: "Tell me a long story, about 900 tokens.", stream: true},
	{prompt: "And another, about 200 tokens.", stream: true},
}

// chatResult is what the client saw of one request.
type chatResult struct {
	status    int
	rateLimit string
	usage     *chatUsage // nil when the response carried none
	body      string     // of a response other than 200
	err       string
	header    http.Header
	bodyBytes int // the request body's size
}

func tokenPhase(url, redisAddr string) (tokenSummary, error) {
	rdb := redistest.NewClient(redisAddr, redistest.Options{})
	defer rdb.Close()
	logKey := "demo:{" + tokenRule + "|" + apiKey + "}:0"
	// A REDIS_ADDR may hold an earlier run's minute: start from nothing.
	if _, err := rdb.Do("DEL", logKey, "demo:{"+requestRule+"|"+apiKey+"}:0"); err != nil {
		return tokenSummary{}, fmt.Errorf("redis: %w", err)
	}

	fmt.Printf("\ntokens: API key %s sends chat requests, JSON and streamed (SSE), until rule %q (%d tokens a\n", apiKey, tokenRule, tokenLimit)
	fmt.Printf("minute per x-api-key, next to %q: 10 requests a second) denies. Each request reserves its\n", requestRule)
	fmt.Printf("x-max-tokens, or 300, plus its input (its body's bytes over 4, rounded up); when the response\n")
	fmt.Printf("ends, the filter charges the usage it reported instead.\n")
	fmt.Printf("RateLimit is what was left after the reservation; the last column is the key's sliding log in\n")
	fmt.Printf("Redis once the response has settled.\n\n")
	fmt.Printf("%-3s %-5s %-7s %-6s %-18s %-28s %s\n", "#", "body", "reserve", "status", "tokens used", "RateLimit", "in the window (Redis)")

	var sum tokenSummary
	for i, t := range turns {
		output := int64(300)
		if t.maxTokens > 0 {
			output = t.maxTokens
		}
		kind := "json"
		if t.stream {
			kind = "sse"
		}
		r := chat(url, t)
		input := int64(r.bodyBytes+3) / 4
		reserve := fmt.Sprintf("%d+%d", output, input)
		used := "-"
		switch {
		case r.status == http.StatusOK && r.usage != nil:
			u := r.usage
			used = fmt.Sprintf("%d+%d = %d", u.PromptTokens, u.CompletionTokens, u.PromptTokens+u.CompletionTokens)
			sum.admitted++
			sum.reserved += output + input
			sum.used += u.PromptTokens + u.CompletionTokens
		case r.status == http.StatusOK:
			used = "no usage"
		}
		// Wait, with a bound, for the settle to land: the log then holds
		// what every admitted response used.
		inLog, err := logTotal(rdb, logKey)
		for deadline := time.Now().Add(settleWait); err == nil && inLog != sum.used && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
			inLog, err = logTotal(rdb, logKey)
		}
		window := fmt.Sprint(inLog)
		switch {
		case err != nil:
			window = "redis: " + err.Error()
		case inLog != sum.used:
			window += fmt.Sprintf(" (not yet settled to %d after %s)", sum.used, settleWait)
		case inLog > tokenLimit:
			window += fmt.Sprintf(" (%d in debt)", inLog-tokenLimit)
		}
		status := strconv.Itoa(r.status)
		if r.err != "" {
			status = r.err
		}
		fmt.Printf("%-3d %-5s %-7s %-6s %-18s %-28s %s\n", i+1, kind, reserve, status, used, r.rateLimit, window)
		sum.window = inLog
		if r.status == http.StatusTooManyRequests {
			fmt.Printf("\nrequest %d is denied until enough of the minute's tokens have left the window: %s\n", i+1, r.body)
			break
		}
	}
	return sum, nil
}

// tokenSummary is what the token phase did, to check against the metrics.
type tokenSummary struct {
	admitted       int
	reserved, used int64 // over the admitted requests
	window         int64 // the log's total at the end
}

// chat sends one turn as the API key and reads the whole response.
func chat(url string, t chatTurn) chatResult {
	return postChat(url, "demo-model", t, map[string]string{"x-api-key": apiKey})
}

// postChat sends one turn for model with the given request headers.
func postChat(url, model string, t chatTurn, headers map[string]string) chatResult {
	body := map[string]any{"model": model, "messages": []any{map[string]string{"role": "user", "content": t.prompt}}}
	if t.stream {
		body["stream"] = true
		body["stream_options"] = map[string]bool{"include_usage": true}
	}
	if t.maxTokens > 0 {
		body["max_tokens"] = t.maxTokens
	}
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if t.maxTokens > 0 {
		req.Header.Set("x-max-tokens", strconv.FormatInt(t.maxTokens, 10))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return chatResult{status: -1, err: err.Error(), bodyBytes: len(b)}
	}
	defer resp.Body.Close()
	r := chatResult{status: resp.StatusCode, rateLimit: resp.Header.Get("RateLimit"), header: resp.Header, bodyBytes: len(b)}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		r.body = strings.TrimSpace(string(b))
		return r
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var chunk struct{ Usage *chatUsage }
			if json.Unmarshal([]byte(data), &chunk) == nil && chunk.Usage != nil {
				r.usage = chunk.Usage
			}
		}
		if err := sc.Err(); err != nil {
			r.err = "read: " + err.Error()
		}
		return r
	}
	var whole struct{ Usage *chatUsage }
	if err := json.NewDecoder(resp.Body).Decode(&whole); err != nil {
		r.err = "read: " + err.Error()
	}
	r.usage = whole.Usage
	return r
}

// logTotal is the sum of the weights in a sliding log's sorted set: one
// member per admission, "<microseconds>[.<n>][:<weight>]", weight 1 when
// absent; member "s" keeps the total for the script, and is skipped.
func logTotal(rdb *redistest.Client, key string) (int64, error) {
	members, err := rdb.Strings("ZRANGE", key, 0, -1)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, m := range members {
		if m == "s" {
			continue
		}
		w := int64(1)
		if _, after, ok := strings.Cut(m, ":"); ok {
			if w, err = strconv.ParseInt(after, 10, 64); err != nil {
				return 0, fmt.Errorf("log member %q: %w", m, err)
			}
		}
		total += w
	}
	return total, nil
}

// tokenMetric matches a rule's metric in the host's "metrics: map[...]"
// line at shutdown.
var tokenMetric = regexp.MustCompile(`ratelimit\.rule\.` + tokenRule + `\.([a-z_]+):(-?\d+)`)

// printTokenMetrics prints the token rule's metrics from the host's log,
// and checks them against what the client saw and Redis holds.
func printTokenMetrics(hostLog string, sum tokenSummary) {
	m := hostMetrics(hostLog, tokenMetric)
	if len(m) == 0 {
		fmt.Println("\ntoken metrics: the host reported none at shutdown")
		return
	}
	fmt.Printf("\ntoken metrics, as the host reported them at shutdown (ratelimit.rule.%s.*):\n", tokenRule)
	for _, name := range []string{"allowed", "denied", "units_charged", "units_refunded", "units_overdrawn", "usage_missing", "stream_reset"} {
		fmt.Printf("  %-16s %d\n", name, m[name])
	}
	settled := sum.reserved + m["units_charged"] - m["units_refunded"]
	verdict := "matches"
	if settled != sum.used || settled != sum.window {
		verdict = "DOES NOT match"
	}
	fmt.Printf("  reserved %d + charged %d - refunded %d = %d: %s the usage the client saw (%d) and the log in Redis (%d)\n",
		sum.reserved, m["units_charged"], m["units_refunded"], settled, verdict, sum.used, sum.window)
}
