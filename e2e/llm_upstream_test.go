package e2e

import (
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// llmUpstream speaks the usage formats of OpenAI's Chat Completions
// (/v1/chat/completions) and Responses (/v1/responses) APIs and of
// Anthropic's Messages API (/v1/messages), as JSON or as server-sent
// events. The test chooses through request headers:
//
//	x-usage-in, x-usage-out   the usage the response reports
//	x-usage-cached            of the input, cached (OpenAI; Anthropic: cache reads, apart)
//	x-usage-reasoning         of the output, reasoning (OpenAI)
//	x-model                   the model the response names
//	x-service-tier            the service_tier an OpenAI response names
//	x-usage-extra             JSON members added to an Anthropic usage (its last, streamed)
//	x-answer-model            the model the response names, before x-model (when a rule reads x-model)
//	x-gzip: 1                 compress the body (content-encoding: gzip)
//	x-gzip: auto              compress as accept-encoding allows: gzip, else deflate, else not
//	x-no-usage: 1             an OpenAI chat stream without its usage chunk (no include_usage)
//	x-usage-if-asked: 1       the same, unless the body sets stream_options.include_usage, as OpenAI does
//	x-stream: 1               answer text/event-stream
//	x-status: 401             answer that status (a JSON error, no usage)
//	x-hold: <name>            stream the first event, then wait for release(name)
//	x-reset: 1                reset the connection after the first event
type llmUpstream struct {
	*httptest.Server
	mu      sync.Mutex
	holds   map[string]chan struct{}
	started chan string // a held stream has sent its first event
}

func newLLMUpstream(t *testing.T) *llmUpstream {
	u := &llmUpstream{holds: map[string]chan struct{}{}, started: make(chan string, 256)}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(func() {
		u.releaseAll()
		u.Close()
	})
	return u
}

func (u *llmUpstream) hold(name string) chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	ch := u.holds[name]
	if ch == nil {
		ch = make(chan struct{})
		u.holds[name] = ch
	}
	return ch
}

// release lets every stream held under name finish.
func (u *llmUpstream) release(name string) { close(u.hold(name)) }

func (u *llmUpstream) releaseAll() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for name, ch := range u.holds {
		select {
		case <-ch:
		default:
			close(ch)
		}
		delete(u.holds, name)
	}
}

// llmUsage is what a response reports.
type llmUsage struct {
	in, out, cached, reasoning int
	model, tier, extra         string
}

func (u *llmUpstream) serve(w http.ResponseWriter, r *http.Request) {
	reqBody, _ := io.ReadAll(r.Body)
	num := func(h string) int { n, _ := strconv.Atoi(r.Header.Get(h)); return n }
	use := llmUsage{num("x-usage-in"), num("x-usage-out"), num("x-usage-cached"), num("x-usage-reasoning"), r.Header.Get("x-model"),
		r.Header.Get("x-service-tier"), r.Header.Get("x-usage-extra")}
	if m := r.Header.Get("x-answer-model"); m != "" {
		use.model = m
	}
	if s := r.Header.Get("x-status"); s != "" {
		status, _ := strconv.Atoi(s)
		w.Header().Set("content-type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, `{"error":{"message":"refused by the test upstream"}}`)
		return
	}
	api := llmAPI(r.URL.Path)
	if api == "" {
		http.NotFound(w, r)
		return
	}
	var out io.Writer = w
	flush := w.(http.Flusher).Flush
	accept := strings.ToLower(r.Header.Get("accept-encoding"))
	switch gz := r.Header.Get("x-gzip"); {
	case gz == "1" || gz == "auto" && strings.Contains(accept, "gzip"):
		w.Header().Set("content-encoding", "gzip")
		zw := gzip.NewWriter(w)
		defer zw.Close()
		out = zw
		flush = func() { zw.Flush(); w.(http.Flusher).Flush() }
	case gz == "auto" && strings.Contains(accept, "deflate"):
		w.Header().Set("content-encoding", "deflate")
		zw := zlib.NewWriter(w)
		defer zw.Close()
		out = zw
		flush = func() { zw.Flush(); w.(http.Flusher).Flush() }
	}
	if r.Header.Get("x-stream") != "1" {
		w.Header().Set("content-type", "application/json")
		io.WriteString(out, llmJSON(api, use))
		return
	}
	w.Header().Set("content-type", "text/event-stream")
	w.Header().Set("cache-control", "no-cache")
	events := llmEvents(api, use)
	asked := strings.Contains(strings.ReplaceAll(string(reqBody), " ", ""), `"include_usage":true`)
	if api == "openai_chat" && (r.Header.Get("x-no-usage") == "1" || r.Header.Get("x-usage-if-asked") == "1" && !asked) {
		events = append(events[:len(events)-2], events[len(events)-1]) // the usage chunk is the one before [DONE]
	}
	io.WriteString(out, events[0])
	flush()
	if r.Header.Get("x-reset") == "1" {
		panic(http.ErrAbortHandler) // the connection drops mid-stream
	}
	if name := r.Header.Get("x-hold"); name != "" {
		u.started <- name
		select {
		case <-u.hold(name):
		case <-r.Context().Done():
			return
		}
	}
	for _, e := range events[1:] {
		io.WriteString(out, e)
		flush()
	}
}

func llmAPI(path string) string {
	switch path {
	case "/v1/chat/completions":
		return "openai_chat"
	case "/v1/responses":
		return "openai_responses"
	case "/v1/messages":
		return "anthropic"
	}
	return ""
}

// llmModel is the model a response names: the test's, else each API's own.
func llmModel(api string, u llmUsage) string {
	if u.model != "" {
		return u.model
	}
	return map[string]string{"openai_chat": "gpt-4o-mini", "openai_responses": "gpt-4o", "anthropic": "claude-sonnet-4-5"}[api]
}

// llmJSON is a non-streaming response reporting in + out tokens.
func llmJSON(api string, u llmUsage) string {
	in, out, model := u.in, u.out, llmModel(api, u)
	switch api {
	case "openai_chat":
		return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion","model":%q,`+u.tierJSON()+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello."},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d},"completion_tokens_details":{"reasoning_tokens":%d}}}`,
			model, in, out, in+out, u.cached, u.reasoning)
	case "openai_responses":
		return fmt.Sprintf(`{"id":"resp_1","object":"response","status":"completed","model":%q,`+
			`"output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello."}]}],`+
			`"usage":{"input_tokens":%d,"input_tokens_details":{"cached_tokens":%d},"output_tokens":%d,"output_tokens_details":{"reasoning_tokens":%d},"total_tokens":%d}}`,
			model, in, u.cached, out, u.reasoning, in+out)
	}
	return fmt.Sprintf(`{"id":"msg_1","type":"message","role":"assistant","model":%q,`+
		`"content":[{"type":"text","text":"Hello."}],"stop_reason":"end_turn",`+
		`"usage":{"input_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":%d,"output_tokens":%d%s}}`, model, in, u.cached, out, u.extraJSON())
}

// llmEvents is a streamed response, one string per event; the usage is
// in the last events, as each API sends it.
func llmEvents(api string, u llmUsage) []string {
	in, out, model := u.in, u.out, llmModel(api, u)
	var ev []string
	switch api {
	case "openai_chat": // with stream_options.include_usage
		chunk := `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"` + model + `",`
		ev = append(ev, chunk+`"choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"usage":null}`+"\n\n")
		for _, w := range strings.Fields("Hello there , how can I help ?") {
			ev = append(ev, chunk+`"choices":[{"index":0,"delta":{"content":"`+w+`"}}],"usage":null}`+"\n\n")
		}
		ev = append(ev, chunk+`"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}`+"\n\n",
			chunk+u.tierJSON()+fmt.Sprintf(`"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d},"completion_tokens_details":{"reasoning_tokens":%d}}}`,
				in, out, in+out, u.cached, u.reasoning)+"\n\n",
			"data: [DONE]\n\n")
	case "openai_responses":
		ev = append(ev, "event: response.created\n"+`data: {"type":"response.created","response":{"id":"resp_1","status":"in_progress","model":"`+model+`","usage":null}}`+"\n\n")
		for _, w := range strings.Fields("Hello there , how can I help ?") {
			ev = append(ev, "event: response.output_text.delta\n"+`data: {"type":"response.output_text.delta","delta":"`+w+`"}`+"\n\n")
		}
		ev = append(ev, "event: response.completed\n"+fmt.Sprintf(`data: {"type":"response.completed","response":{"id":"resp_1","status":"completed","model":%q,`+
			`"usage":{"input_tokens":%d,"input_tokens_details":{"cached_tokens":%d},"output_tokens":%d,"output_tokens_details":{"reasoning_tokens":%d},"total_tokens":%d}}}`,
			model, in, u.cached, out, u.reasoning, in+out)+"\n\n")
	default: // anthropic
		ev = append(ev, "event: message_start\n"+fmt.Sprintf(`data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":%q,"content":[],`+
			`"usage":{"input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":1}}}`, model, in, u.cached)+"\n\n",
			"event: content_block_start\n"+`data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`+"\n\n",
			"event: ping\n"+`data: {"type": "ping"}`+"\n\n")
		for _, w := range strings.Fields("Hello there , how can I help ?") {
			ev = append(ev, "event: content_block_delta\n"+`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+w+`"}}`+"\n\n")
		}
		ev = append(ev, "event: content_block_stop\n"+`data: {"type":"content_block_stop","index":0}`+"\n\n",
			"event: message_delta\n"+fmt.Sprintf(`data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":%d%s}}`, out, u.extraJSON())+"\n\n",
			"event: message_stop\n"+`data: {"type":"message_stop"}`+"\n\n")
	}
	return ev
}

// tierJSON is the service_tier member of an OpenAI response, and its comma.
func (u llmUsage) tierJSON() string {
	if u.tier == "" {
		return ""
	}
	return fmt.Sprintf(`"service_tier":%q,`, u.tier)
}

// extraJSON is x-usage-extra's members, after a comma.
func (u llmUsage) extraJSON() string {
	if u.extra == "" {
		return ""
	}
	return "," + u.extra
}
