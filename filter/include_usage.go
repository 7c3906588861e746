package filter

import (
	"bytes"

	"github.com/tidwall/gjson"
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
// a configuration with a degrade rule the decision is made at the headers,
// before the proxy routes, so the body is not held for this.

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
			s.askUsage = true
			if _, ok := s.req.headerValues("content-length"); ok {
				w.RemoveRequestHeader("content-length")
			}
			return
		}
	}
}

// askForUsage sets include_usage in the held body, when it streams
// without it.
func (s *Stream) askForUsage() {
	s.askUsage = false
	if len(s.req.body) == 0 {
		return
	}
	if body, ok := withIncludeUsage(s.req.body); ok {
		s.host.(RequestBodyWriter).ReplaceRequestBody(body)
	}
}

// withIncludeUsage returns a copy of a chat request body with
// stream_options.include_usage set to true, when "stream" is true and it
// is not; ok is false when there is nothing to change, or body is not a
// JSON object. body must have passed jsonbound.Valid.
func withIncludeUsage(body []byte) (out []byte, ok bool) {
	if gjson.GetBytes(body, "stream").Type != gjson.True {
		return nil, false
	}
	so := gjson.GetBytes(body, "stream_options")
	switch {
	case !so.Exists(): // a last field, before the object's end
		end := len(bytes.TrimRight(body, " \t\r\n")) - 1
		if end < 1 || body[end] != '}' {
			return nil, false
		}
		return splice(body, end, end, `,"stream_options":{"include_usage":true}`), true
	case !at(body, so):
		return nil, false
	case so.IsObject():
		iu := so.Get("include_usage")
		switch {
		case iu.Type == gjson.True:
			return nil, false
		case !iu.Exists():
		case at(body, iu): // gjson gives a nested result's index in body
			return splice(body, iu.Index, iu.Index+len(iu.Raw), "true"), true
		default:
			return nil, false
		}
		insert := `"include_usage":true,`
		if inner := bytes.TrimSpace([]byte(so.Raw[1 : len(so.Raw)-1])); len(inner) == 0 {
			insert = `"include_usage":true`
		}
		return splice(body, so.Index+1, so.Index+1, insert), true
	}
	return splice(body, so.Index, so.Index+len(so.Raw), `{"include_usage":true}`), true
}

// at reports whether r's raw text is at its index in body.
func at(body []byte, r gjson.Result) bool {
	return r.Index > 0 && r.Index+len(r.Raw) <= len(body) && string(body[r.Index:r.Index+len(r.Raw)]) == r.Raw
}

// splice is body with body[from:to] replaced by s, in a new slice.
func splice(body []byte, from, to int, s string) []byte {
	out := make([]byte, 0, len(body)-(to-from)+len(s))
	out = append(out, body[:from]...)
	out = append(out, s...)
	return append(out, body[to:]...)
}
