package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// The demo's upstream, behind the filter: /v1/chat/completions answers as
// OpenAI's Chat Completions API does, as one JSON body or, with "stream":
// true, as server-sent events whose last chunk carries the usage (what
// "stream_options": {"include_usage": true} asks for); any other path gets
// a small JSON echo.
//
// The "model" picks its own usage, so that the demo does not know it in
// advance: the prompt costs a token per four bytes of its messages, and
// the answer is as long as the last message asks ("... about 400 tokens"),
// 50 tokens when it does not say, cut at max_tokens when the request sets
// it (finish_reason "length"). The answer names the request's model.
//
// A request that came with x-ratelimit-exhausted (set by a rule with
// "on_limit": {"action": "degrade"}) gets it back in sawExhausted, so that
// the demo can show what reached the upstream.
func startUpstream() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", chatCompletions)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"upstream\":\"demo\",\"method\":%q,\"uri\":%q}\n", r.Method, r.RequestURI)
	})
	srv := &http.Server{Handler: mux}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Printf("upstream: %v", err)
		}
	}()
	return "http://" + ln.Addr().String(), func() { srv.Close() }, nil
}

// chatRequest is the part of a Chat Completions request the upstream reads.
type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Stream        bool `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens int64 `json:"max_tokens"`
}

type chatUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// sawExhausted is the response header in which the upstream reports the
// x-ratelimit-exhausted header it received.
const sawExhausted = "x-demo-upstream-saw-exhausted"

var askedLength = regexp.MustCompile(`about (\d+) tokens`)

func chatCompletions(w http.ResponseWriter, r *http.Request) {
	if v := r.Header.Get("x-ratelimit-exhausted"); v != "" {
		w.Header().Set(sawExhausted, v)
	}
	var req chatRequest
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil || len(req.Messages) == 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"message":"want a POST with a JSON body holding messages","type":"invalid_request_error"}}`+"\n")
		return
	}
	var u chatUsage
	for _, m := range req.Messages {
		u.PromptTokens += int64(len(m.Content)+3) / 4
	}
	u.CompletionTokens = 50
	if m := askedLength.FindStringSubmatch(req.Messages[len(req.Messages)-1].Content); m != nil {
		u.CompletionTokens, _ = strconv.ParseInt(m[1], 10, 64)
	}
	finish := "stop"
	if req.MaxTokens > 0 && u.CompletionTokens > req.MaxTokens {
		u.CompletionTokens, finish = req.MaxTokens, "length"
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	model := req.Model
	if model == "" {
		model = "demo-model"
	}
	words := answer(u.CompletionTokens)

	if !req.Stream {
		body, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-demo", "object": "chat.completion", "model": model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": finish,
				"message": map[string]any{"role": "assistant", "content": strings.Join(words, " ")}}},
			"usage": u,
		})
		w.Header().Set("Content-Type", "application/json")
		w.Write(append(body, '\n'))
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flush := func() {}
	if f, ok := w.(http.Flusher); ok {
		flush = f.Flush
	}
	event := func(choices []any, usage *chatUsage) {
		chunk := map[string]any{"id": "chatcmpl-demo", "object": "chat.completion.chunk", "model": model, "choices": choices, "usage": usage}
		b, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", b)
		flush()
	}
	event([]any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": ""}}}, nil)
	for _, word := range words {
		event([]any{map[string]any{"index": 0, "delta": map[string]any{"content": word + " "}}}, nil)
	}
	event([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}, nil)
	if req.StreamOptions.IncludeUsage {
		event([]any{}, &u)
	}
	io.WriteString(w, "data: [DONE]\n\n")
	flush()
}

// answer is the reply's text: a word per 50 tokens, at least one, so that
// a stream has a few chunks.
func answer(tokens int64) []string {
	n := max(1, tokens/50)
	words := make([]string, n)
	for i := range words {
		words[i] = "lorem"
	}
	return words
}
