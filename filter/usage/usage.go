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

	"github.com/redisrate/envoy-redis-ratelimit/filter/price"
	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
	"github.com/tidwall/gjson"
)

// Fields are where a response's usage lies: integer fields, each filling a
// slot, and the slots counted summed. Per slot, the last field found
// counts: in a stream, the last event that has one of its fields.
type Fields struct {
	json []string // gjson paths in a JSON body
	sse  []string // gjson paths in the JSON data of server-sent events
	// jsonSlot, sseSlot: per path, its slot; nil when path i fills slot i.
	jsonSlot, sseSlot []uint8
	slots             int    // how many
	counted           uint16 // the slots summed, one bit each
	// A preset's slots are the kinds of tokens (price.Input, ...), raw as
	// the API counts them; included: its input count includes the cached
	// tokens and its output count the reasoning tokens (OpenAI's).
	kinds, included bool
	model           [2]string // the model's path in a JSON body, in an event; "" when none
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

// Paths returns fields at the given gjson paths (at most 16), the same in
// a JSON body and in each event of a stream, all summed. It keeps paths.
func Paths(paths []string) *Fields {
	return &Fields{json: paths, sse: paths, slots: len(paths), counted: 1<<len(paths) - 1}
}

// HasKinds reports whether the fields tell the kinds of tokens apart (a
// preset's do), so that Scanner.Tokens has a meaning.
func (f *Fields) HasKinds() bool { return f.kinds }

// presets by configuration name. What each counts (summed: the first two
// fields; the others tell the kinds apart, for prices):
//
//   - openai_chat (Chat Completions): prompt_tokens, which includes cached
//     prompt tokens (prompt_tokens_details.cached_tokens), plus
//     completion_tokens, which includes reasoning and audio tokens
//     (completion_tokens_details.reasoning_tokens). Streamed, usage comes
//     only with stream_options.include_usage, in the last chunk (choices
//     empty) before [DONE]; the other chunks carry "usage":null.
//   - openai_responses (Responses): input_tokens, including
//     input_tokens_details.cached_tokens, plus output_tokens, including
//     output_tokens_details.reasoning_tokens. Streamed: response.usage of
//     response.completed (also of response.incomplete and response.failed,
//     same shape; response.created has "usage":null).
//   - anthropic (Messages): input_tokens, which excludes cache reads and
//     writes (cache_read_input_tokens, cache_creation_input_tokens: add those
//     fields to count them), plus output_tokens, which includes extended
//     thinking. Streamed: message_start's message.usage, then each
//     message_delta's usage, cumulative: output_tokens always, and, with
//     server tools, input_tokens and the cache counts, which then replace
//     message_start's.
var presets = map[string]Fields{
	"openai_chat": preset(true, "model", "model",
		kindPath{price.Input, "usage.prompt_tokens", "usage.prompt_tokens"},
		kindPath{price.Output, "usage.completion_tokens", "usage.completion_tokens"},
		kindPath{price.Cached, "usage.prompt_tokens_details.cached_tokens", "usage.prompt_tokens_details.cached_tokens"},
		kindPath{price.Reasoning, "usage.completion_tokens_details.reasoning_tokens", "usage.completion_tokens_details.reasoning_tokens"}),
	"openai_responses": preset(true, "model", "response.model",
		kindPath{price.Input, "usage.input_tokens", "response.usage.input_tokens"},
		kindPath{price.Output, "usage.output_tokens", "response.usage.output_tokens"},
		kindPath{price.Cached, "usage.input_tokens_details.cached_tokens", "response.usage.input_tokens_details.cached_tokens"},
		kindPath{price.Reasoning, "usage.output_tokens_details.reasoning_tokens", "response.usage.output_tokens_details.reasoning_tokens"}),
	"anthropic": preset(false, "model", "message.model",
		kindPath{price.Input, "usage.input_tokens", "message.usage.input_tokens"},
		kindPath{price.Output, "usage.output_tokens", "usage.output_tokens"},
		kindPath{price.Cached, "usage.cache_read_input_tokens", "message.usage.cache_read_input_tokens"},
		kindPath{price.CacheWrite, "usage.cache_creation_input_tokens", "message.usage.cache_creation_input_tokens"},
		kindPath{price.Input, "", "usage.input_tokens"}, // message_delta's, later, wins
		kindPath{price.Cached, "", "usage.cache_read_input_tokens"},
		kindPath{price.CacheWrite, "", "usage.cache_creation_input_tokens"}),
}

// kindPath is a preset's field of one kind, in a JSON body and in an event.
type kindPath struct {
	kind      uint8
	json, sse string
}

func preset(included bool, modelJSON, modelSSE string, paths ...kindPath) Fields {
	f := Fields{slots: price.Kinds, counted: 1<<price.Input | 1<<price.Output, kinds: true, included: included, model: [2]string{modelJSON, modelSSE}}
	for _, p := range paths {
		if p.json != "" {
			f.json, f.jsonSlot = append(f.json, p.json), append(f.jsonSlot, p.kind)
		}
		f.sse, f.sseSlot = append(f.sse, p.sse), append(f.sseSlot, p.kind)
	}
	return f
}

// slot is the slot of path i of paths (json or sse).
func slot(slots []uint8, i int) int {
	if slots == nil {
		return i
	}
	return int(slots[i])
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
// within jsonbound's bounds. A gzip body is kept compressed and read at
// Finish (gzip.go).
type Scanner struct {
	f    *Fields
	sse  bool
	max  int  // JSON: the body's cap
	over bool // JSON: the body passed max; SSE: the event passed eventMax
	// eventMax bounds one event of a stream: max(maxEvent, maxBytes).
	eventMax int
	buf      []byte  // JSON: the body; SSE: the event's data lines, each ending in '\n'
	vals     []int64 // per slot, its last value, or -1
	model    [price.MaxModelLen]byte
	modelLen int // -1: no model read
	enc      encoding
	z        gzipState

	// SSE only.
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
	u.vals, u.needles, u.gate, u.modelLen, u.enc = u.vals[:0], u.needles[:0], "", -1, identity
	u.z.reset()
	u.st, u.nameLen, u.first, u.cr = lineStart, 0, true, false
	if f == nil {
		return
	}
	for range f.slots {
		u.vals = append(u.vals, -1)
	}
	if !sse {
		return
	}
	for _, p := range f.sse {
		u.needles = append(u.needles, needleOf(p))
	}
	u.gate = gateOf(u.needles)
}

// Write reads the next chunk of the body. It never retains chunk.
func (u *Scanner) Write(chunk []byte) {
	switch {
	case u.f == nil:
	case u.enc != identity:
		u.writeEncoded(chunk)
	default:
		u.write(chunk)
	}
}

// write reads a chunk of the body as it is, decoded.
func (u *Scanner) write(chunk []byte) {
	switch {
	case u.sse:
		u.writeSSE(chunk)
	case u.over:
	case len(u.buf)+len(chunk) > u.max:
		u.over, u.buf = true, u.buf[:0]
	default:
		u.buf = appendCapped(u.buf, chunk, u.max)
	}
}

// Finish returns the sum of the counted fields found; found is false when
// none was present as an integer from 0 to 2^53. An event stream's
// unterminated last event is discarded.
func (u *Scanner) Finish() (total int64, found bool) {
	if u.f == nil {
		return 0, false
	}
	if u.enc != identity && !u.decode() {
		return 0, false
	}
	if !u.sse {
		u.readJSON()
	}
	for k, v := range u.vals {
		if v >= 0 && u.f.counted&(1<<k) != 0 {
			total, found = addCapped(total, v), true
		}
	}
	return total, found
}

// readJSON reads the fields and the model of the JSON body held.
func (u *Scanner) readJSON() {
	if u.over || !jsonbound.Valid(u.buf) {
		return
	}
	body := bytesString(u.buf)
	for i, p := range u.f.json {
		if v, ok := fieldInt(gjson.Get(body, p)); ok {
			u.vals[slot(u.f.jsonSlot, i)] = v
		}
	}
	u.readModel(body, u.f.model[0])
}

// readModel keeps the model named at path in JSON data, if any.
func (u *Scanner) readModel(data, path string) {
	if path == "" {
		return
	}
	if r := gjson.Get(data, path); r.Type == gjson.String && len(r.Str) <= len(u.model) {
		u.modelLen = copy(u.model[:], r.Str)
	}
}

// Tokens are, after Finish, the response's tokens per kind, disjoint
// (cached tokens out of the input, reasoning tokens out of the output,
// where the API counts them inside), and the model it names ("" when
// none; valid until the next Start). Only for fields with kinds (a
// preset's).
func (u *Scanner) Tokens() (t price.Tokens, model string) {
	if u.f == nil || !u.f.kinds {
		return t, ""
	}
	for k := range price.Kinds {
		t[k] = max(u.vals[k], 0)
	}
	if u.f.included {
		t[price.Cached] = min(t[price.Cached], t[price.Input])
		t[price.Input] -= t[price.Cached]
		t[price.Reasoning] = min(t[price.Reasoning], t[price.Output])
		t[price.Output] -= t[price.Reasoning]
	}
	if u.modelLen > 0 {
		model = bytesString(u.model[:u.modelLen])
	}
	return t, model
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
