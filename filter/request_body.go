package filter

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

// A rule may read the request's JSON body: its key or match
// (config.Rule.ReadsBody), its price table's model (ReadsModel), a chat
// stream's stream_options (AsksUsage, include_usage.go), or its
// reservation (reserve.body, such as max_tokens). The decision then waits
// for the body's end: end_of_stream, the trailers, or more than the rules'
// max_request_body_bytes. A body a rule cannot read as the upstream will
// (larger than its bound, or refused by jsonbound) denies the request, or
// under on_unreadable_body: missing has none of its fields.
//
// A key, match or model lets the headers go on and holds the body (Pause from
// each body callback buffers it) until the decision: no body byte reaches
// the upstream before it, whatever allow_on_headers_stop_iteration says,
// but Envoy's router may have sent the headers (docs/proxies.md, "The
// request body").
//
// A reservation alone pauses the headers, so the upstream sees nothing
// before the decision; so does a key or match when an on_limit degrade
// rule matches too, whose header must be set before the router picks the
// route (degrade.go). Envoy delivers body callbacks to a filter whose
// headers paused only with allow_on_headers_stop_iteration (false by
// default): otherwise the body waits behind the paused headers. So such a
// stream never waits more than bodyWait: then it is decided without the
// body (with the estimates' defaults; a degrade rule that reads the body
// degrades the request unchecked, for a request whose degrade decision
// cannot be made does not reach the primary route), and its body follows
// once it resumes.
const bodyWait = time.Second

// bodyWaitState is the body wait step's state: the decision waits for
// the request body (waiting), reading at most limit bytes; since is when
// a stream whose headers paused began to wait; missed: it waited
// bodyWait in vain, and is decided without the body.
type bodyWaitState struct {
	waiting bool
	missed  bool
	limit   int
	since   time.Time
}

// bodyMissed reports whether the stream waited for its body in vain.
func (s *Stream) bodyMissed() bool { return s.wait != nil && s.wait.missed }

// SetBodyFollows tells the stream, before its request headers, whether a
// body follows them (the headers' end_of_stream is false).
func (s *Stream) SetBodyFollows(follows bool) { s.bodyFollows = follows }

// WantsRequestBody reports whether the stream waits for the request body:
// the proxy must then buffer it (Pause) and hand over the whole body at
// its end (OnRequestBody), or its size once over RequestBodyLimit
// (OnRequestBodyTooLarge).
func (s *Stream) WantsRequestBody() bool { return s.wait != nil && s.wait.waiting }

// RequestBodyLimit is the most body bytes the stream reads; valid while
// WantsRequestBody.
func (s *Stream) RequestBodyLimit() int {
	if s.wait == nil {
		return 0
	}
	return s.wait.limit
}

// OnRequestBody takes the whole request body once it has ended (at
// end_of_stream or at the trailers), and decides the request. A body is
// read as the upstream will read it (jsonbound.ReadBody), or refused.
func (s *Stream) OnRequestBody(body []byte) Action {
	if !s.WantsRequestBody() {
		return s.HoldUntilAdmitted()
	}
	s.stopWaiting()
	s.req.bodyLen, s.req.body, s.req.bodyRefusal = len(body), s.req.body[:0], 0
	switch {
	case len(body) == 0: // no body: its fields are missing
	case len(body) > s.wait.limit:
		s.req.bodyRefusal = jsonbound.RefuseTooLarge
	default:
		text, why := jsonbound.ReadBody(body)
		s.req.body, s.req.bodyRefusal = append(s.req.body, text...), why
	}
	if s.reserve != nil && s.reserve.askUsage && s.req.bodyRefusal == 0 {
		s.askForUsage()
	}
	return s.decideLater()
}

// OnRequestBodyTooLarge decides the request once its body, still coming,
// holds size bytes, more than RequestBodyLimit: it is refused.
func (s *Stream) OnRequestBodyTooLarge(size int) Action {
	if !s.WantsRequestBody() {
		return s.HoldUntilAdmitted()
	}
	s.stopWaiting()
	s.req.body, s.req.bodyLen, s.req.bodyRefusal = s.req.body[:0], size, jsonbound.RefuseTooLarge
	return s.decideLater()
}

// waitForBody starts waiting for the body when a rule the request matches,
// as far as its headers tell, reads it: Continue when a key or match
// reads it (the body is held), Pause for a reservation alone, or when a
// degrade rule matches too: its header must be set before the headers go
// on to the router (degrade.go), and config.Config.BodyWhileHeadersPaused
// says the proxy delivers the body meanwhile.
func (s *Stream) waitForBody() (Action, bool) {
	keys, reserve, degrade, limit := false, false, false, 0
	for i := range s.pol.cfg.Rules {
		r := &s.pol.cfg.Rules[i]
		k, res := s.pol.holdsBody(r), r.Response != nil && r.Response.Reserve.Body != ""
		if !k && !res && !r.OnLimit.Degrade || !matchesHead(&r.Match, &s.req) {
			continue
		}
		degrade = degrade || r.OnLimit.Degrade
		if k || res {
			keys, reserve, limit = keys || k, reserve || res, max(limit, r.MaxRequestBodyBytes)
		}
	}
	if !keys && !reserve {
		return Continue, false
	}
	if s.wait == nil {
		s.wait = &bodyWaitState{}
	}
	w := s.wait
	w.limit = limit
	if keys && !degrade {
		w.waiting = true // the body callbacks come: no bodyWait
		return Continue, true
	}
	w.waiting, w.since = true, s.clock()
	s.vm.waiting = append(s.vm.waiting, s)
	return Pause, true
}

// stopWaiting ends the wait for the body.
func (s *Stream) stopWaiting() {
	s.wait.waiting = false
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

// sweepBodyWaits decides the streams that waited bodyWait for their body:
// with their defaults when the proxy does not deliver it while the
// headers wait; with body_while_headers_paused it does, so the body is
// late (a client that trickles it), and unreadable to the rules that read
// it (on_unreadable_body; a degrade rule degrades, degrade.go).
func (p *Plugin) sweepBodyWaits(now time.Time) {
	for i := 0; i < len(p.waiting); {
		s := p.waiting[i]
		if now.Sub(s.wait.since) < bodyWait {
			i++
			continue
		}
		s.stopWaiting()
		s.now, s.wait.missed = now, true
		if s.pol.cfg.BodyWhileHeadersPaused {
			s.req.bodyRefusal = jsonbound.RefuseLate
		}
		if s.decideLater() == Continue {
			s.host.Resume()
		}
	}
}

// jsonBody is the request's body for the rule being evaluated (bodyMax),
// as jsonbound.ReadBody returned it: "" when there is none, or when the
// rule may not read it (r.refused then says why).
func (r *request) jsonBody() string {
	switch {
	case r.bodyLen > r.bodyMax:
		r.refuse(jsonbound.RefuseTooLarge)
	case r.bodyRefusal != 0:
		r.refuse(r.bodyRefusal)
	case r.bodyLen == 0:
	default:
		return bytesString(r.body)
	}
	return ""
}

// refuse keeps the first reason the rule being evaluated could not read
// the body.
func (r *request) refuse(why jsonbound.Refusal) {
	if r.refused == 0 {
		r.refused = why
	}
}

// bodyField is a body field's JSON text, as jsonbound.Lookup reads it (the
// last of duplicate keys); "" when it is absent or refused.
func (r *request) bodyField(path string) string {
	body := r.jsonBody()
	if body == "" {
		return ""
	}
	raw, why := jsonbound.Lookup(body, path)
	if why != 0 {
		r.refuse(why)
	}
	return raw
}

// bodyValue reads a body field as a key part or match sees it: a string's
// text, a boolean as written, or a number by its value (numberText); present
// is false for a field that is absent, null, an object or an array. A
// number's text lives in r.num until the next call.
func (r *request) bodyValue(path string) (v string, present bool) {
	return r.fieldValue(r.bodyField(path))
}

// fieldValue reads a field's JSON text raw as bodyValue does: a body's
// field, or a JSON-RPC call's (callValue).
func (r *request) fieldValue(raw string) (v string, present bool) {
	switch {
	case raw == "" || raw[0] == 'n' || raw[0] == '{' || raw[0] == '[':
		return "", false
	case raw[0] == '"':
		return jsonvalue.Parse(raw).Str, true
	case raw[0] == 't' || raw[0] == 'f':
		return raw, true
	case bigInteger(raw):
		r.refuse(jsonbound.RefuseBigInteger)
		return "", false
	}
	r.num = appendNumberText(r.num[:0], raw)
	return bytesString(r.num), true
}

// bigInteger reports whether raw is an integer written plainly whose
// magnitude passes 2^53: Python reads it exactly, a float64 parser (Go's
// any, JavaScript) rounds it, so 2^53+1 and 2^53 would be two keys to one
// and one value to the other.
func bigInteger(raw string) bool {
	digits := strings.TrimPrefix(raw, "-")
	if len(digits) < 16 || strings.ContainsAny(digits, ".eE") {
		return false
	}
	return len(digits) > 16 || digits > "9007199254740992"
}

// appendNumberText appends a JSON number (NaN and ±Infinity included) as
// one text per value, since every upstream parser reads 1, 1.0 and 1e0 as
// equal numbers: an integer written plainly stays as written (Python keeps
// its every digit); any other number is its float64, written without a
// fraction when it is an integer below 1e21 (1.0 and 1e0 are 1, -0 is 0),
// else shortest (0.70 is 0.7, NaN, +Inf, -Inf).
func appendNumberText(dst []byte, raw string) []byte {
	plain := raw != "-0" && (raw[0] != '0' || len(raw) == 1)
	for i := 0; i < len(raw) && plain; i++ {
		plain = raw[i] >= '0' && raw[i] <= '9' || i == 0 && raw[i] == '-' && len(raw) > 1 && raw[1] != '0'
	}
	if plain {
		return append(dst, raw...)
	}
	f, _ := strconv.ParseFloat(raw, 64) // ±Inf past float64's range, 0 below it
	switch {
	case f == 0:
		return append(dst, '0')
	case f == math.Trunc(f) && math.Abs(f) < 1e21:
		return strconv.AppendFloat(dst, f, 'f', -1, 64)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

// bodyString reads a string field of the body.
func (r *request) bodyString(path string) (string, bool) {
	if raw := r.bodyField(path); raw != "" && raw[0] == '"' {
		return jsonvalue.Parse(raw).Str, true
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
	raw := r.bodyField(path)
	if raw == "" || raw[len(raw)-1] < '0' || raw[len(raw)-1] > '9' || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return 0, false // not a finite number
	}
	v := jsonvalue.Parse(raw)
	if v.Type != jsonvalue.Number || v.Num < 0 || v.Num > config.MaxResponseCost || v.Num != float64(int64(v.Num)) {
		return 0, false
	}
	return int64(v.Num), true
}

// unreadable reports whether rule ri denies the request for a body it
// could not read (on_unreadable_body: deny). A shadow rule notes the
// denial it would make; under missing, the fields are missing. Either
// way ratelimit.request_body.unreadable counts the request once.
func (s *Stream) unreadable(ri int) bool {
	rule := &s.pol.cfg.Rules[ri]
	if s.req.refused == 0 || !rule.ReadsRequestBody() {
		return false
	}
	if !s.req.unreadableCounted {
		s.req.unreadableCounted = true
		s.pol.metrics.unreadableBody.Increment(1)
	}
	if rule.OnUnreadableBody != config.UnreadableDeny {
		return false
	}
	v := verdict{rule: ri, limit: -1, reason: reasonUnreadableBody, body: s.req.refused}
	if rule.Shadow {
		s.pol.metrics.rules[ri].shadowDenied.Increment(1)
		s.noteShadowDenial(v)
		return false
	}
	s.pol.metrics.rules[ri].denied.Increment(1)
	s.reject(&v)
	return true
}
