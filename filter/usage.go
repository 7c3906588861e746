package filter

import (
	"math"
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
	"github.com/tidwall/gjson"
)

// usageFields are where a response's usage lies: integer fields, summed.
type usageFields struct {
	json []string // gjson paths in a JSON body
	sse  []string // gjson paths in the JSON data of server-sent events; per path, the last event that has it counts
}

// usagePresets by configuration name. What each counts:
//
//   - openai_chat (Chat Completions): prompt_tokens, which includes cached
//     prompt tokens (prompt_tokens_details.cached_tokens), plus
//     completion_tokens, which includes reasoning and audio tokens
//     (completion_tokens_details). Streamed, usage comes only with
//     stream_options.include_usage, in the last chunk (choices empty) before
//     [DONE]; the other chunks carry "usage":null.
//   - openai_responses (Responses): input_tokens, including
//     input_tokens_details.cached_tokens, plus output_tokens, including
//     output_tokens_details.reasoning_tokens. Streamed: response.usage of
//     response.completed (also of response.incomplete and response.failed,
//     same shape; response.created has "usage":null).
//   - anthropic (Messages): input_tokens, which excludes cache reads and
//     writes (cache_read_input_tokens, cache_creation_input_tokens: add those
//     fields to count them), plus output_tokens, which includes extended
//     thinking. Streamed: input from message_start (message.usage), output
//     from the last message_delta (usage, cumulative).
var usagePresets = map[string]usageFields{
	"openai_chat": {
		json: []string{"usage.prompt_tokens", "usage.completion_tokens"},
		sse:  []string{"usage.prompt_tokens", "usage.completion_tokens"},
	},
	"openai_responses": {
		json: []string{"usage.input_tokens", "usage.output_tokens"},
		sse:  []string{"response.usage.input_tokens", "response.usage.output_tokens"},
	},
	"anthropic": {
		json: []string{"usage.input_tokens", "usage.output_tokens"},
		sse:  []string{"message.usage.input_tokens", "usage.output_tokens"},
	},
}

// usageMaxValue is the largest field value counted: 2^53, exact in a double.
const usageMaxValue = 1 << 53

// usageScanner reads one response's body as it passes. Reused across
// streams: start resets it; steady state allocates nothing.
//
// A JSON body is copied, up to maxBytes, and read at finish, if it is
// valid JSON nested at most jsonbound.MaxDepth deep (gjson's Get then
// recurses only as deep as its path). An event
// stream is split into events as it passes (usage_sse.go); only the data
// of the current event is held, and each event's data is read when it
// ends, if it may hold a path: it must contain the text of the path's last
// key (a key spelled with JSON escapes is not seen) and be valid JSON
// within jsonbound's bounds.
type usageScanner struct {
	f    *usageFields
	sse  bool
	max  int  // JSON: the body's cap
	over bool // JSON: the body passed max; SSE: the event passed eventMax
	// eventMax bounds one event of a stream: max(usageMaxEvent, maxBytes).
	eventMax int
	buf      []byte // JSON: the body; SSE: the event's data lines, each ending in '\n'

	// SSE only.
	vals    []int64  // per path, its last value, or -1
	needles []string // per path, its last key as text; "" when not plain
	gate    string   // a suffix all needles share, searched first; "" when none
	st      uint8    // line state (usage_sse.go)
	nameLen uint8
	name    [7]byte // a field name's start: "data", after a BOM on the first line
	first   bool    // on the stream's first line
	cr      bool    // the last chunk ended in '\r'
}

// start readies u for a response of this kind: an event stream if sse,
// else a JSON body of at most maxBytes. Each event of a stream is bounded
// by maxBytes too, or usageMaxEvent when that is more.
func (u *usageScanner) start(f *usageFields, sse bool, maxBytes int) {
	u.f, u.sse, u.max, u.over = f, sse, maxBytes, false
	u.eventMax = max(usageMaxEvent, maxBytes)
	u.buf = u.buf[:0]
	u.vals, u.needles, u.gate = u.vals[:0], u.needles[:0], ""
	u.st, u.nameLen, u.first, u.cr = usageLineStart, 0, true, false
	if f == nil || !sse {
		return
	}
	for _, p := range f.sse {
		u.vals = append(u.vals, -1)
		u.needles = append(u.needles, usageNeedle(p))
	}
	u.gate = usageGate(u.needles)
}

// write reads the next chunk of the body. It never retains chunk.
func (u *usageScanner) write(chunk []byte) {
	switch {
	case u.f == nil:
	case u.sse:
		u.writeSSE(chunk)
	case u.over:
	case len(u.buf)+len(chunk) > u.max:
		u.over, u.buf = true, u.buf[:0]
	default:
		u.buf = usageAppend(u.buf, chunk, u.max)
	}
}

// finish returns the sum of the fields found; found is false when none
// was present as an integer from 0 to 2^53. An event stream's unterminated
// last event is discarded.
func (u *usageScanner) finish() (total int64, found bool) {
	if u.f == nil {
		return 0, false
	}
	if u.sse {
		for _, v := range u.vals {
			if v >= 0 {
				total, found = usageAdd(total, v), true
			}
		}
		return total, found
	}
	if u.over || !jsonbound.Valid(u.buf) {
		return 0, false
	}
	body := bytesString(u.buf)
	for _, p := range u.f.json {
		if v, ok := usageInt(gjson.Get(body, p)); ok {
			total, found = usageAdd(total, v), true
		}
	}
	return total, found
}

// usageInt reads a field: a plain JSON integer from 0 to 2^53. Fractions,
// exponents and negative numbers do not count.
func usageInt(r gjson.Result) (int64, bool) {
	if r.Type != gjson.Number || r.Raw == "" || len(r.Raw) > 16 {
		return 0, false
	}
	var v int64
	for i := 0; i < len(r.Raw); i++ {
		c := r.Raw[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, v <= usageMaxValue
}

// usageAdd adds without overflow, stopping at the largest int64.
func usageAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// usageAppend appends p to b, growing b at most to limit bytes.
func usageAppend(b, p []byte, limit int) []byte {
	if n := len(b) + len(p); n > cap(b) {
		nb := make([]byte, len(b), min(max(2*cap(b), n, 512), max(limit, n)))
		copy(nb, b)
		b = nb
	}
	return append(b, p...)
}

// usageNeedle is the text an event must contain to hold path: its last
// key, when that is plain (letters, digits, '_', '-', not all digits).
func usageNeedle(path string) string {
	key := path[strings.LastIndexByte(path, '.')+1:]
	digits := true
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case c >= '0' && c <= '9':
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '-':
			digits = false
		default:
			return ""
		}
	}
	if digits {
		return ""
	}
	return key
}

// usageGate is the longest suffix all needles share, when there are two or
// more and it has at least 4 bytes ("_tokens" for the presets): an event
// without it holds no path, whatever their number.
func usageGate(needles []string) string {
	if len(needles) < 2 {
		return ""
	}
	g := needles[0]
	for _, n := range needles[1:] {
		if n == "" {
			return ""
		}
		k := 0
		for k < len(g) && k < len(n) && g[len(g)-1-k] == n[len(n)-1-k] {
			k++
		}
		g = g[len(g)-k:]
	}
	if len(g) < 4 {
		return ""
	}
	return g
}
