package filter

import (
	"bytes"
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

// OpenAI's Chat Completions API sends a stream's usage only when the
// request asks for it (stream_options.include_usage). For a request a
// rule with the openai_chat preset may match, the filter asks for it: in
// the request headers' callback it removes content-length (the body's
// length will change: the proxy then sends the body chunked, or framed by
// HTTP/2), and at the body's end, held by the filter (request_body.go), it
// sets stream_options.include_usage to true in a body with "stream": true
// that does not, before the body goes on. A body it cannot read (not JSON
// within jsonbound's bounds, over max_request_body_bytes) goes on as it
// came; a stream without usage is then charged on_missing's estimate. In
// a configuration with a degrade rule and without body_while_headers_paused
// the decision is made at the headers, before the proxy routes, so the
// body is not held for this.

// RequestBodyWriter is what a StreamHost offers to replace the request
// body, at its end, before it goes on.
type RequestBodyWriter interface {
	ReplaceRequestBody(body []byte)
}

// prepareUsageAsk readies a request a rule asking for usage may match: its
// content-length goes, so that its body may change.
func (s *Stream) prepareUsageAsk() {
	w, _ := s.host.(RequestHeaderWriter)
	if _, ok := s.host.(RequestBodyWriter); !ok || w == nil || !s.bodyFollows || s.pol.headDecides {
		return
	}
	for i := range s.pol.cfg.Rules {
		r := &s.pol.cfg.Rules[i]
		if r.AsksUsage() && matchesHead(&r.Match, &s.req) {
			s.reserving().askUsage = true
			if _, ok := s.req.headerValues("content-length"); ok {
				w.RemoveRequestHeader("content-length")
			}
			return
		}
	}
}

// askForUsage sets include_usage in the held body, when it streams
// without it. A body whose stream or stream_options the filter cannot read
// as the upstream will is unreadable (on_unreadable_body).
func (s *Stream) askForUsage() {
	s.reserve.askUsage = false
	if len(s.req.body) == 0 {
		return
	}
	body, ok, why := withIncludeUsage(s.req.body)
	switch {
	case why != 0:
		s.req.bodyRefusal = why
	case ok:
		s.host.(RequestBodyWriter).ReplaceRequestBody(body)
	}
}

// withIncludeUsage returns a copy of a chat request body with
// stream_options.include_usage set to true, when "stream" may stream (any
// value but false or null: a lax parser streams for 1 or "true") and it is
// not, read as the upstream reads them (jsonbound.LookupAt: the last of
// duplicate keys); ok is false when there is nothing to change, or body is
// not a JSON object, and why says when stream or stream_options cannot be
// read so. A change goes where the upstream will read it: in place when
// the key is given once, else as a last member, which every parser that
// reads the last duplicate takes. body must have passed jsonbound.ReadBody.
func withIncludeUsage(body []byte) (out []byte, ok bool, why jsonbound.Refusal) {
	text := bytesString(body)
	switch stream, why := jsonbound.Lookup(text, "stream"); {
	case why != 0:
		return nil, false, why
	case stream == "" || stream == "false" || stream == "null":
		return nil, false, 0
	}
	start, end, why := jsonbound.LookupAt(text, "stream_options")
	switch {
	case why != 0:
		return nil, false, why
	case start < 0: // absent
		return withLast(body, `"stream_options":{"include_usage":true}`)
	case jsonvalue.GetBytes(body, "stream_options").Index != start: // given more than once
		return withLast(body, `"stream_options":`+string(withTrue(text[start:end])))
	case text[start] != '{':
		return splice(body, start, end, `{"include_usage":true}`), true, 0
	}
	iStart, iEnd, why := jsonbound.LookupAt(text, "stream_options.include_usage")
	switch {
	case why != 0: // a key like it but for case
	case iStart < 0:
		insert := `"include_usage":true,`
		if len(bytes.TrimSpace(body[start+1:end-1])) == 0 {
			insert = `"include_usage":true`
		}
		return splice(body, start+1, start+1, insert), true, 0
	case text[iStart:iEnd] == "true":
		return nil, false, 0
	case jsonvalue.Get(text[start:end], "include_usage").Index+start == iStart: // given once
		return splice(body, iStart, iEnd, "true"), true, 0
	}
	return splice(body, start, end, string(withTrue(text[start:end]))), true, 0
}

// withTrue is the object o with "include_usage":true as its last member
// (any other value, {"include_usage":true}).
func withTrue(o string) []byte {
	inner := strings.TrimSpace(o)
	if len(inner) < 2 || inner[0] != '{' {
		return []byte(`{"include_usage":true}`)
	}
	inner = strings.TrimSpace(inner[1 : len(inner)-1])
	if inner == "" {
		return []byte(`{"include_usage":true}`)
	}
	return []byte("{" + inner + `,"include_usage":true}`)
}

// withLast is lastMember's change, as withIncludeUsage returns it.
func withLast(body []byte, m string) ([]byte, bool, jsonbound.Refusal) {
	out, ok := lastMember(body, m)
	return out, ok, 0
}

// lastMember is body, a JSON object, with member m added last.
func lastMember(body []byte, m string) ([]byte, bool) {
	end := len(bytes.TrimRight(body, " \t\r\n")) - 1
	if end < 1 || body[end] != '}' {
		return nil, false
	}
	if len(bytes.TrimSpace(body[:end])) == 1 { // {}
		return splice(body, end, end, m), true
	}
	return splice(body, end, end, ","+m), true
}

// splice is body with body[from:to] replaced by s, in a new slice.
func splice(body []byte, from, to int, s string) []byte {
	out := make([]byte, 0, len(body)-(to-from)+len(s))
	out = append(out, body[:from]...)
	out = append(out, s...)
	return append(out, body[to:]...)
}
