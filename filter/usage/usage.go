// Package usage reads how much a response used (an LLM's tokens, say) from
// its body as the body passes: integer fields of a JSON body, or of the
// JSON data of a server-sent event stream, summed. A response_cost rule's
// usage or json setting names the fields (Preset, Paths); a Scanner, one
// per rule and response and recycled, reads them with bounded memory and,
// in steady state, no allocation. Untrusted bodies are checked by package
// jsonbound, without recursion, before package jsonvalue reads them. A
// field whose value is not a count (number.go) makes the whole usage
// missing; in a stream, each field's largest value counts. A preset also reads the model
// and the service tier the response names (presets.go).
package usage

import (
	"math"
	"strings"
	"unsafe"

	"github.com/redisrate/envoy-redis-ratelimit/filter/price"
	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

// Fields are where a response's usage lies: integer fields, each filling a
// slot, and the slots counted summed. Per slot, the largest value found
// counts: in a stream, counts are cumulative (Anthropic's), and one that
// goes down does not lower the charge. A field present but not a count
// (fieldValue) makes the whole usage missing.
type Fields struct {
	json []string // jsonvalue paths in a JSON body
	sse  []string // jsonvalue paths in the JSON data of server-sent events
	// jsonSlot, sseSlot: per path, its slot; nil when path i fills slot i.
	jsonSlot, sseSlot []uint8
	slots             int    // how many
	counted           uint16 // the slots summed, one bit each
	// A preset's slots are the kinds of tokens (price.Input, ...), raw as
	// the API counts them; included: its input count includes the cached
	// tokens and its output count the reasoning tokens (OpenAI's).
	kinds, included bool
	model           [2]string // the model's path in a JSON body, in an event; "" when none
	// tier: the service tier's path in a JSON body, then in an event (two
	// at most); "" when none.
	tier [3]string
	// riders: the last riders paths of sse are read only from an event
	// another path made the scanner read (their needles are not searched).
	riders int
	// split: the cache writes are split (anthropic): see Scanner.Tokens.
	split bool
}

// Paths returns fields at the given paths (at most 16, as jsonvalue.Get
// reads them), the same in a JSON body and in each event of a stream, all
// summed. It keeps paths.
func Paths(paths []string) *Fields {
	return &Fields{json: paths, sse: paths, slots: len(paths), counted: 1<<len(paths) - 1}
}

// HasKinds reports whether the fields tell the kinds of tokens apart (a
// preset's do), so that Scanner.Tokens has a meaning.
func (f *Fields) HasKinds() bool { return f.kinds }

// slot is the slot of path i of paths (json or sse).
func slot(slots []uint8, i int) int {
	if slots == nil {
		return i
	}
	return int(slots[i])
}

// Scanner reads one response's body as it passes. Reused across
// streams: Start resets it; steady state allocates nothing.
//
// A JSON body is copied, up to maxBytes, and read at Finish, if it is
// valid JSON nested at most jsonbound.MaxDepth deep. An event
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
	vals     []int64 // per slot, its largest value, or -1
	bad      bool    // a field was present but not a count: no usage
	model    [price.MaxModelLen]byte
	modelLen int // -1: no model read
	tier     [price.MaxTierLen]byte
	tierLen  int  // -1: no tier read
	tierBad  bool // a tier not a string, too long, or two different ones
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
	u.bad, u.tierLen, u.tierBad = false, -1, false
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
	u.gate = gateOf(u.needles[:len(u.needles)-f.riders])
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
// none was present, or when any field was present but not an integer from
// 0 to MaxValue (fieldValue). An event stream's unterminated last event is
// discarded.
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
	if u.bad {
		return 0, false
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
		u.note(slot(u.f.jsonSlot, i), jsonvalue.Get(body, p))
	}
	u.readModel(body, u.f.model[0])
	u.readTier(body, u.f.tier[0])
}

// note reads a field of slot k: its largest value counts.
func (u *Scanner) note(k int, r jsonvalue.Value) {
	switch v, st := fieldValue(r); st {
	case counted:
		u.vals[k] = max(u.vals[k], v)
	case bad:
		u.bad = true
	}
}

// readTier reads the service tier named at path in JSON data, if any: a
// tier not a string, too long, or other than one read before is not known.
func (u *Scanner) readTier(data, path string) {
	if path == "" {
		return
	}
	r := jsonvalue.Get(data, path)
	switch {
	case !r.Exists() || r.Type == jsonvalue.Null:
	case r.Type != jsonvalue.String || len(r.Str) > len(u.tier):
		u.tierBad = true
	case u.tierLen < 0:
		u.tierLen = copy(u.tier[:], r.Str)
	case string(u.tier[:u.tierLen]) != r.Str:
		u.tierBad = true
	}
}

// ServiceTier is, after Finish, the service tier the response names ("" when
// none; valid until the next Start); known is false when it named one
// unclearly: not a string, longer than price.MaxTierLen, or two different
// ones in a stream.
func (u *Scanner) ServiceTier() (tier string, known bool) {
	if u.tierBad {
		return "", false
	}
	if u.tierLen > 0 {
		tier = bytesString(u.tier[:u.tierLen])
	}
	return tier, true
}

// readModel keeps the model named at path in JSON data, if any.
func (u *Scanner) readModel(data, path string) {
	if path == "" {
		return
	}
	if r := jsonvalue.Get(data, path); r.Type == jsonvalue.String && len(r.Str) <= len(u.model) {
		u.modelLen = copy(u.model[:], r.Str)
	}
}

// Tokens are, after Finish, the response's tokens per kind, disjoint
// (cached tokens out of the input, reasoning tokens out of the output,
// where the API counts them inside), and the model it names ("" when
// none; valid until the next Start). Only for fields with kinds (a
// preset's). Split cache writes (anthropic): the 5-minute and 1-hour
// counts, the 5-minute one raised so that the two are at least the total
// (cache_creation_input_tokens); without the split, the total is charged
// as 5-minute writes.
func (u *Scanner) Tokens() (t price.Tokens, model string) {
	if u.f == nil || !u.f.kinds {
		return t, ""
	}
	for k := range price.Kinds {
		t[k] = max(u.vals[k], 0)
	}
	if u.f.split {
		t[price.CacheWrite] = max(t[price.CacheWrite], u.vals[cacheTotal]-t[price.CacheWrite1h])
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
