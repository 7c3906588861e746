package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
)

// The built-in upstream's answer to a Chat Completions request, in the
// shape of OpenAI's API, so that a response_cost rule with "usage":
// "openai_chat" reads its usage: prompt_tokens is the number of words of
// the messages, completion_tokens the request's max_tokens (default
// chatDefaultMax), as if the model wrote until its limit. A stand-in for
// trying rules, not a model of the API.

const (
	chatID         = "chatcmpl-echo"
	chatDefaultMax = 16
	chatMaxTokens  = 1_000_000_000 // the largest max_tokens taken
	// chatText is what the stand-in "writes", cut to max_tokens words.
	chatText = "This is the wasmhost echo upstream, a stand-in for an LLM: it reports max_tokens as the completion's tokens."
)

// chatRequest is what the stand-in reads of a request.
type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	MaxTokens           *int64 `json:"max_tokens"`
	MaxCompletionTokens *int64 `json:"max_completion_tokens"`
	Stream              bool   `json:"stream"`
	StreamOptions       struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type chatUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatChoice struct {
	Index        int         `json:"index"`
	Message      chatMessage `json:"message"`
	FinishReason string      `json:"finish_reason"`
}

type chatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   chatUsage    `json:"usage"`
}

type chunkDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type chunkChoice struct {
	Index        int        `json:"index"`
	Delta        chunkDelta `json:"delta"`
	FinishReason *string    `json:"finish_reason"`
}

type chatChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	// Usage is null in every chunk but the last with include_usage, absent
	// without it, as OpenAI sends it.
	Usage json.RawMessage `json:"usage,omitempty"`
}

// serveChat answers a POST to .../chat/completions with status.
func serveChat(w http.ResponseWriter, r *http.Request, status int) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxEchoBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			chatError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body: larger than %d bytes", maxEchoBody))
		} else {
			chatError(w, http.StatusBadRequest, "request body: "+err.Error())
		}
		return
	}
	req, usage, err := parseChat(body)
	if err != nil {
		chatError(w, http.StatusBadRequest, err.Error())
		return
	}
	model := req.Model
	if model == "" {
		model = "echo"
	}
	words := strings.Fields(chatText)
	words = words[:min(int64(len(words)), usage.CompletionTokens)]
	created := time.Now().Unix()
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(chatCompletion{ID: chatID, Object: "chat.completion", Created: created, Model: model,
			Choices: []chatChoice{{Message: chatMessage{Role: "assistant", Content: strings.Join(words, " ")}, FinishReason: "length"}},
			Usage:   usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(status)
	rc := http.NewResponseController(w)
	var null json.RawMessage
	if req.StreamOptions.IncludeUsage {
		null = json.RawMessage("null")
	}
	send := func(choices []chunkChoice, usage json.RawMessage) {
		b, _ := json.Marshal(chatChunk{ID: chatID, Object: "chat.completion.chunk", Created: created, Model: model, Choices: choices, Usage: usage})
		fmt.Fprintf(w, "data: %s\n\n", b)
		rc.Flush()
	}
	empty := ""
	send([]chunkChoice{{Delta: chunkDelta{Role: "assistant", Content: &empty}}}, null)
	for i, word := range words {
		if i > 0 {
			word = " " + word
		}
		send([]chunkChoice{{Delta: chunkDelta{Content: &word}}}, null)
	}
	length := "length"
	send([]chunkChoice{{FinishReason: &length}}, null)
	if req.StreamOptions.IncludeUsage {
		u, _ := json.Marshal(usage)
		send([]chunkChoice{}, u)
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

// parseChat reads a request body and works out its usage.
func parseChat(body []byte) (*chatRequest, chatUsage, error) {
	var u chatUsage
	if err := jsonbound.Check(body); err != nil {
		return nil, u, errors.New("request body: " + strings.TrimPrefix(err.Error(), "jsonbound: "))
	}
	req := &chatRequest{}
	if err := json.Unmarshal(body, req); err != nil {
		return nil, u, fmt.Errorf("request body: %w", err)
	}
	for i, m := range req.Messages {
		n, err := contentWords(m.Content)
		if err != nil {
			return nil, u, fmt.Errorf("messages[%d].content: %w", i, err)
		}
		u.PromptTokens += n
	}
	u.CompletionTokens = chatDefaultMax
	for _, f := range []struct {
		name string
		v    *int64
	}{{"max_tokens", req.MaxTokens}, {"max_completion_tokens", req.MaxCompletionTokens}} {
		if f.v == nil {
			continue
		}
		if *f.v < 1 || *f.v > chatMaxTokens {
			return nil, u, fmt.Errorf("%s %d: want 1 to %d", f.name, *f.v, chatMaxTokens)
		}
		u.CompletionTokens = *f.v
		break
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return req, u, nil
}

// contentWords counts the whitespace-separated words of a message's
// content: a string, or an array of parts whose text counts; null is none.
func contentWords(raw json.RawMessage) (int64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, err
		}
		return int64(len(strings.Fields(s))), nil
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return 0, errors.New("want a string or an array of parts")
	}
	var n int64
	for _, p := range parts {
		n += int64(len(strings.Fields(p.Text)))
	}
	return n, nil
}

// chatError answers as OpenAI's API does when it refuses a request.
func chatError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": "invalid_request_error", "param": nil, "code": nil}})
}
