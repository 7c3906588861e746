package filter

import (
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
	"github.com/tidwall/gjson"
)

// A rule may read the request's JSON body: its key or match
// (config.Rule.ReadsBody), its price table's model (ReadsModel), a chat
// stream's stream_options (AsksUsage, include_usage.go), or its
// reservation (reserve.body, such as max_tokens). The decision then waits for the body's end: end_of_stream,
// the trailers, or more than the rules' max_request_body_bytes (whose
// fields are then missing).
//
// A key, match or model lets the headers go on and holds the body (Pause from
// each body callback buffers it) until the decision: no body byte reaches
// the upstream before it, whatever allow_on_headers_stop_iteration says,
// but Envoy's router may have sent the headers (docs/proxies.md, "The
// request body").
//
// A reservation alone pauses the headers, so the upstream sees nothing
// before the decision. Envoy delivers body callbacks to a filter whose
// headers paused only with allow_on_headers_stop_iteration (false by
// default): otherwise the body waits behind the paused headers. So such a
// stream never waits more than bodyWait: then it is decided with the
// estimates' defaults, and its body follows once it resumes.
const bodyWait = time.Second

// SetBodyFollows tells the stream, before its request headers, whether a
// body follows them (the headers' end_of_stream is false).
func (s *Stream) SetBodyFollows(follows bool) { s.bodyFollows = follows }

// WantsRequestBody reports whether the stream waits for the request body:
// the proxy must then buffer it (Pause) and hand over the whole body at
// its end (OnRequestBody), or its size once over RequestBodyLimit
// (OnRequestBodyTooLarge).
func (s *Stream) WantsRequestBody() bool { return s.waitingBody }

// RequestBodyLimit is the most body bytes the stream reads; valid while
// WantsRequestBody.
func (s *Stream) RequestBodyLimit() int { return s.bodyLimit }

// OnRequestBody takes the whole request body once it has ended (at
// end_of_stream or at the trailers), and decides the request.
func (s *Stream) OnRequestBody(body []byte) Action {
	if !s.waitingBody {
		return s.HoldUntilAdmitted()
	}
	s.stopWaiting()
	s.req.bodyLen = len(body)
	s.req.body = s.req.body[:0]
	if len(body) <= s.bodyLimit && jsonbound.Valid(body) {
		s.req.body = append(s.req.body, body...)
	} // else every field of it is missing
	if s.askUsage {
		s.askForUsage()
	}
	return s.decideLater()
}

// OnRequestBodyTooLarge decides the request once its body, still coming,
// holds size bytes, more than RequestBodyLimit: its fields are missing.
func (s *Stream) OnRequestBodyTooLarge(size int) Action {
	if !s.waitingBody {
		return s.HoldUntilAdmitted()
	}
	s.stopWaiting()
	s.req.body, s.req.bodyLen = s.req.body[:0], size
	return s.decideLater()
}

// waitForBody starts waiting for the body when a rule the request matches,
// as far as its headers tell, reads it: Continue when a key or match
// reads it (the body is held), Pause for a reservation alone.
func (s *Stream) waitForBody() (Action, bool) {
	keys, reserve, limit := false, false, 0
	for i := range s.pol.cfg.Rules {
		r := &s.pol.cfg.Rules[i]
		k, res := s.pol.holdsBody(r), r.Response != nil && r.Response.Reserve.Body != ""
		if !k && !res || !matchesHead(&r.Match, &s.req) {
			continue
		}
		keys, reserve, limit = keys || k, reserve || res, max(limit, r.MaxRequestBodyBytes)
	}
	if !keys && !reserve {
		return Continue, false
	}
	s.bodyLimit = limit
	if keys {
		s.waitingBody = true // the body callbacks come: no bodyWait
		return Continue, true
	}
	s.waitingBody, s.waitingSince = true, s.clock()
	s.vm.waiting = append(s.vm.waiting, s)
	return Pause, true
}

// stopWaiting ends the wait for the body.
func (s *Stream) stopWaiting() {
	s.waitingBody = false
	vm := s.vm
	for i, w := range vm.waiting {
		if w == s {
			vm.waiting = append(vm.waiting[:i], vm.waiting[i+1:]...)
			break
		}
	}
}

// decideLater evaluates the rules outside the request headers' callback,
// answering by return value: an admission continues the body callback, or
// resumes the paused stream once Redis has answered.
func (s *Stream) decideLater() Action {
	s.inHeaders = true
	a := s.evaluate()
	s.inHeaders = false
	return a
}

// sweepBodyWaits decides, with their defaults, the streams that waited
// bodyWait for a body the proxy does not deliver.
func (p *Plugin) sweepBodyWaits(now time.Time) {
	for i := 0; i < len(p.waiting); {
		s := p.waiting[i]
		if now.Sub(s.waitingSince) < bodyWait {
			i++
			continue
		}
		s.stopWaiting()
		s.now = now
		if s.decideLater() == Continue {
			s.host.Resume()
		}
	}
}

// jsonBody is the request's body for the rule being evaluated (bodyMax):
// empty when there is none, it is not JSON within jsonbound's bounds, or
// it is larger than the rule reads.
func (r *request) jsonBody() string {
	if r.bodyLen > r.bodyMax {
		return ""
	}
	return bytesString(r.body)
}

// bodyValue reads a body field as a key part or match sees it: a string's
// text, or a number or boolean as written; present is false for a field
// that is absent, null, an object or an array.
func (r *request) bodyValue(path string) (v string, present bool) {
	body := r.jsonBody()
	if body == "" {
		return "", false
	}
	f := gjson.Get(body, path)
	switch f.Type {
	case gjson.String:
		return f.Str, true
	case gjson.Number, gjson.True, gjson.False:
		return f.Raw, true
	}
	return "", false
}

// bodyMatch reports whether every match.body entry holds for r.
func bodyMatch(ms []config.HeaderMatch, r *request) bool {
	for i := range ms {
		if v, present := r.bodyValue(ms[i].Name); !valueMatches(&ms[i], v, present) {
			return false
		}
	}
	return true
}

// bodyInteger reads a non-negative integer field of the body.
func (r *request) bodyInteger(path string) (int64, bool) {
	body := r.jsonBody()
	if body == "" {
		return 0, false
	}
	v := gjson.Get(body, path)
	if v.Type != gjson.Number || v.Num < 0 || v.Num > config.MaxResponseCost || v.Num != float64(int64(v.Num)) {
		return 0, false
	}
	return int64(v.Num), true
}
