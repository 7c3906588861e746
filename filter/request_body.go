package filter

import (
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
	"github.com/tidwall/gjson"
)

// A reservation may come from the request's JSON body, such as max_tokens.
// The decision then waits for the whole body: the headers pause, and the
// body is buffered by the proxy until its end reaches OnRequestBody.
//
// Envoy delivers body callbacks to a filter whose headers paused only with
// allow_on_headers_stop_iteration (false by default): otherwise the body
// waits behind the paused headers. So a stream never waits more than
// bodyWait: then it is decided with the estimates' defaults, and its body
// follows once it resumes.
const bodyWait = time.Second

// SetBodyFollows tells the stream, before its request headers, whether a
// body follows them (the headers' end_of_stream is false).
func (s *Stream) SetBodyFollows(follows bool) { s.bodyFollows = follows }

// WantsRequestBody reports whether the stream waits for the request body:
// the proxy must then buffer it (Pause) and hand over the whole body at
// its end.
func (s *Stream) WantsRequestBody() bool { return s.waitingBody }

// OnRequestBody takes the whole request body once it has ended, and
// decides the request.
func (s *Stream) OnRequestBody(body []byte) Action {
	if !s.waitingBody {
		return s.HoldUntilAdmitted()
	}
	s.awaitBody(false)
	s.body = append(s.body[:0], body...)
	if !jsonbound.Valid(s.body) {
		s.body = s.body[:0] // every estimate from it takes its default
	}
	return s.decideLater()
}

// needsBody reports whether a rule the request matches reserves from the
// body.
func (s *Stream) needsBody() bool {
	for i := range s.pol.cfg.Rules {
		r := &s.pol.cfg.Rules[i]
		if r.Response != nil && r.Response.Reserve.Body != "" && matches(&r.Match, &s.req) {
			return true
		}
	}
	return false
}

// awaitBody starts or stops waiting for the body.
func (s *Stream) awaitBody(wait bool) {
	s.waitingBody = wait
	vm := s.vm
	if wait {
		s.waitingSince = s.clock()
		vm.waiting = append(vm.waiting, s)
		return
	}
	for i, w := range vm.waiting {
		if w == s {
			vm.waiting = append(vm.waiting[:i], vm.waiting[i+1:]...)
			break
		}
	}
}

// decideLater evaluates the rules outside the request headers' callback:
// the stream is paused, so an admission resumes it.
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
		s.awaitBody(false)
		s.now = now
		if s.decideLater() == Continue {
			s.host.Resume()
		}
	}
}

// bodyInteger reads a non-negative integer field of a JSON body that
// OnRequestBody found within jsonbound's bounds.
func bodyInteger(body []byte, path string) (int64, bool) {
	if len(body) == 0 {
		return 0, false
	}
	v := gjson.Get(bytesString(body), path)
	if v.Type != gjson.Number || v.Num < 0 || v.Num > config.MaxResponseCost || v.Num != float64(int64(v.Num)) {
		return 0, false
	}
	return int64(v.Num), true
}
