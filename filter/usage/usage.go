// Package usage reads how much a response used (an LLM's tokens, say) from
// its body as the body passes: integer fields of a JSON body, or of the
// JSON data of a server-sent event stream, summed. A response_cost rule's
// usage or json setting names the fields (Preset, Paths); a Scanner, one
// per rule and response and recycled, reads them with bounded memory and,
// in steady state, no allocation. Untrusted bodies are checked by package
// jsonbound, without recursion, before gjson reads them.
package usage

import (
	"math"
	"slices"
	"strings"
	"unsafe"

	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
	"github.com/tidwall/gjson"
)

// Fields are where a response's usage lies: integer fields, summed.
type Fields struct {
	json []string // gjson paths in a JSON body
	sse  []string // gjson paths in the JSON data of server-sent events; per path, the last event that has it counts
}

// Preset returns the fields of the named preset (openai_chat,
// openai_responses, anthropic); ok is false for any other name.
func Preset(name string) (f *Fields, ok bool) {
	p, ok := presets[name]
	if !ok {
		return nil, false
	}
	return &p, true
}

// PresetNames lists the presets' names, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Paths returns fields at the given gjson paths, the same in a JSON body
// and in each event of a stream. It keeps paths.
func Paths(paths []string) *Fields {
	return &Fields{json: paths, sse: paths}
}

// presets by configuration name. What each counts:
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
var presets = map[string]Fields{
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

// maxValue is the largest field value counted: 2^53, exact in a double.
const maxValue = 1 << 53

// Scanner reads one response's body as it passes. Reused across
// streams: Start resets it; steady state allocates nothing.
//
// A JSON body is copied, up to maxBytes, and read at Finish, if it is
// valid JSON nested at most jsonbound.MaxDepth deep (gjson's Get then
// recurses only as deep as its path). An event
// stream is split into events as it passes (sse.go); only the data
// of the current event is held, and each event's data is read when it
// ends, if it may hold a path: it must contain the text of the path's last
// key (a key spelled with JSON escapes is not seen) and be valid JSON
// within jsonbound's bounds.
type Scanner struct {
	f    *Fields
	sse  bool
	max  int  // JSON: the body's cap
	over bool // JSON: the body passed max; SSE: the event passed eventMax
	// eventMax bounds one event of a stream: max(maxEvent, maxBytes).
	eventMax int
	buf      []byte // JSON: the body; SSE: the event's data lines, each ending in '\n'

	// SSE only.
	vals    []int64  // per path, its last value, or -1
	needles []string // per path, its last key as text; "" when not plain
	gate    string   // a suffix all needles share, searched first; "" when none
	st      uint8    // line state (sse.go)
	nameLen uint8
	name    [7]byte // a field name's start: "data", after a BOM on the first line
	first   bool    // on the stream's first line
	cr      bool    // the last chunk ended in '\r'
}

// Start readies u for a response of this kind: an event stream if sse,
// else a JSON body of at most maxBytes. Each event of a stream is bounded
// by maxBytes too, or maxEvent when that is more.
func (u *Scanner) Start(f *Fields, sse bool, maxBytes int) {
	u.f, u.sse, u.max, u.over = f, sse, maxBytes, false
	u.eventMax = max(maxEvent, maxBytes)
	u.buf = u.buf[:0]
	u.vals, u.needles, u.gate = u.vals[:0], u.needles[:0], ""
	u.st, u.nameLen, u.first, u.cr = lineStart, 0, true, false
	if f == nil || !sse {
		return
	}
	for _, p := range f.sse {
		u.vals = append(u.vals, -1)
		u.needles = append(u.needles, needleOf(p))
	}
	u.gate = gateOf(u.needles)
}

// Write reads the next chunk of the body. It never retains chunk.
func (u *Scanner) Write(chunk []byte) {
	switch {
	case u.f == nil:
	case u.sse:
		u.writeSSE(chunk)
	case u.over:
	case len(u.buf)+len(chunk) > u.max:
		u.over, u.buf = true, u.buf[:0]
	default:
		u.buf = appendCapped(u.buf, chunk, u.max)
	}
}

// Finish returns the sum of the fields found; found is false when none
// was present as an integer from 0 to 2^53. An event stream's unterminated
// last event is discarded.
func (u *Scanner) Finish() (total int64, found bool) {
	if u.f == nil {
		return 0, false
	}
	if u.sse {
		for _, v := range u.vals {
			if v >= 0 {
				total, found = addCapped(total, v), true
			}
		}
		return total, found
	}
	if u.over || !jsonbound.Valid(u.buf) {
		return 0, false
	}
	body := bytesString(u.buf)
	for _, p := range u.f.json {
		if v, ok := fieldInt(gjson.Get(body, p)); ok {
			total, found = addCapped(total, v), true
		}
	}
	return total, found
}

// fieldInt reads a field: a plain JSON integer from 0 to 2^53. Fractions,
// exponents and negative numbers do not count.
func fieldInt(r gjson.Result) (int64, bool) {
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
	return v, v <= maxValue
}

// addCapped adds without overflow, stopping at the largest int64.
func addCapped(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// appendCapped appends p to b, growing b at most to limit bytes.
func appendCapped(b, p []byte, limit int) []byte {
	if n := len(b) + len(p); n > cap(b) {
		nb := make([]byte, len(b), min(max(2*cap(b), n, 512), max(limit, n)))
		copy(nb, b)
		b = nb
	}
	return append(b, p...)
}

// needleOf is the text an event must contain to hold path: its last
// key, when that is plain (letters, digits, '_', '-', not all digits).
func needleOf(path string) string {
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

// gateOf is the longest suffix all needles share, when there are two or
// more and it has at least 4 bytes ("_tokens" for the presets): an event
// without it holds no path, whatever their number.
func gateOf(needles []string) string {
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

// IsEventStream reports whether a content-type is text/event-stream,
// parameters aside ("text/event-stream; charset=utf-8"), in any case.
func IsEventStream(ct string) bool {
	const want = "text/event-stream"
	if len(ct) < len(want) {
		return false
	}
	for i := 0; i < len(want); i++ {
		c := ct[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != want[i] {
			return false
		}
	}
	return len(ct) == len(want) || ct[len(want)] == ';' || ct[len(want)] == ' '
}

// bytesString is b as a string sharing its bytes: b must not change while
// the string is in use.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
