package filter

import (
	"strconv"
	"strings"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
)

// decide turns the calls' outcomes into the stream's verdict and acts on it.
func (s *Stream) decide() {
	s.decided = true
	m := &s.p.metrics
	now := s.clock()
	var deny verdict
	denied, failed := false, false
	for _, c := range s.calls {
		if c.err != nil {
			failed = failed || !c.shadow
			continue
		}
		d := &c.decision
		if d.Blocked {
			b := &c.blockers[d.BlockedBy]
			m.rules[b.rule].blocked.Increment(1)
			if !c.shadow && !denied {
				deny, denied = verdict{rule: b.rule, limit: -1, reason: "blocked", blocked: true, blockedFor: d.BlockedFor}, true
				if d.BlockedFor > 0 {
					s.p.denied.store(b.tag, 0, now.Add(d.BlockedFor), deny)
				}
			}
			continue
		}
		for start := 0; start < len(c.owners); {
			ri, end, ruleAllowed := c.owners[start].rule, start, true
			for ; end < len(c.owners) && c.owners[end].rule == ri; end++ {
				ruleAllowed = ruleAllowed && d.Results[end].Allowed
			}
			switch {
			case ruleAllowed:
				m.rules[ri].allowed.Increment(1)
			case c.shadow:
				m.rules[ri].shadowDenied.Increment(1)
			default:
				m.rules[ri].denied.Increment(1)
			}
			if !c.shadow {
				s.enforced = append(s.enforced, ri)
			}
			start = end
		}
		if c.shadow {
			continue
		}
		for i := range c.owners {
			o, r := &c.owners[i], d.Results[i]
			if !s.hasVerdict || algorithms.Tighter(r, s.verdict.result) {
				s.verdict, s.hasVerdict = verdict{rule: o.rule, limit: o.limit, result: r, reason: "rate_limited"}, true
			}
			if !r.Allowed && r.RetryAfter > 0 {
				s.p.denied.store(o.tag, o.cost, now.Add(r.RetryAfter), verdict{rule: o.rule, limit: o.limit, result: r, reason: "rate_limited"})
			}
		}
	}
	if !denied && s.hasVerdict && !s.verdict.result.Allowed {
		deny, denied = s.verdict, true
	}
	if !denied && failed {
		if s.p.cfg.FailOpen {
			m.failOpen.Increment(1)
		} else {
			m.failClosed.Increment(1)
			deny, denied = verdict{rule: -1, limit: -1, reason: "ratelimit_unavailable"}, true
		}
	}
	if denied {
		s.reject(&deny)
		return
	}
	s.allowed = true
	if !s.inHeaders {
		s.host.Resume()
	}
}

// countDenial counts a denial answered from the deny cache.
func (s *Stream) countDenial(v *verdict) {
	if v.blocked {
		s.p.metrics.rules[v.rule].blocked.Increment(1)
	} else {
		s.p.metrics.rules[v.rule].denied.Increment(1)
	}
}

// reject answers the request locally.
func (s *Stream) reject(v *verdict) Action {
	s.decided, s.allowed = true, false
	cfg := s.p.cfg
	status := cfg.RejectStatus
	if v.reason == "ratelimit_unavailable" {
		status = cfg.FailureStatus
	}
	var headers [][2]string
	retry := time.Duration(-1)
	switch {
	case v.blocked:
		retry = v.blockedFor
	case v.limit >= 0 && !v.result.Allowed && v.reason == "rate_limited":
		retry = v.result.RetryAfter
	}
	if retry > 0 {
		headers = append(headers, [2]string{"retry-after", strconv.FormatInt(ceilSeconds(retry), 10)})
	}
	if v.reason == "rate_limited" {
		headers = s.appendRateLimitHeaders(headers, v)
	}
	headers = append(headers, [2]string{"content-type", "application/json"})
	body := []byte(`{"error":"` + v.reason + `"`)
	if v.rule >= 0 {
		body = append(body, `,"rule":"`+cfg.Rules[v.rule].Name+`"`...)
	}
	if v.limit >= 0 && v.reason == "rate_limited" {
		body = append(body, `,"limit":"`+cfg.Rules[v.rule].Limits[v.limit].Name+`"`...)
	}
	if retry > 0 {
		body = append(body, `,"retry_after":`...)
		body = strconv.AppendInt(body, ceilSeconds(retry), 10)
	}
	body = append(body, "}\n"...)
	s.host.SendLocalReply(status, headers, body)
	return Pause
}

// OnResponseHeaders adds the rate-limit headers to an admitted response.
func (s *Stream) OnResponseHeaders() Action {
	if s.allowed && s.hasVerdict && s.p.cfg.Headers != HeadersNone {
		var buf [5][2]string
		for _, h := range s.appendRateLimitHeaders(buf[:0], &s.verdict) {
			s.host.AddResponseHeader(h[0], h[1])
		}
	}
	return Continue
}

// appendRateLimitHeaders renders v in the configured header style.
func (s *Stream) appendRateLimitHeaders(h [][2]string, v *verdict) [][2]string {
	style := s.p.cfg.Headers
	if style == HeadersNone {
		return h
	}
	r := v.result
	t := r.ResetAfter
	if !r.Allowed {
		t = r.RetryAfter
	}
	secs := strconv.FormatInt(ceilSeconds(t), 10)
	remaining := strconv.FormatInt(r.Remaining, 10)
	if style == HeadersDraft10 || style == HeadersBoth {
		h = append(h, [2]string{"ratelimit-policy", s.policyHeader(v)},
			[2]string{"ratelimit", s.p.names[v.rule][v.limit] + ";r=" + remaining + ";t=" + secs})
	}
	if style == HeadersLegacy || style == HeadersBoth {
		h = append(h, [2]string{"x-ratelimit-limit", s.p.quotas[v.rule][v.limit]},
			[2]string{"x-ratelimit-remaining", remaining},
			[2]string{"x-ratelimit-reset", secs})
	}
	return h
}

// policyHeader lists the policies of every enforced rule decided, or of
// v's rule when the verdict came from the deny cache.
func (s *Stream) policyHeader(v *verdict) string {
	switch len(s.enforced) {
	case 0:
		return s.p.policies[v.rule]
	case 1:
		return s.p.policies[s.enforced[0]]
	}
	var b strings.Builder
	for i, ri := range s.enforced {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(s.p.policies[ri])
	}
	return b.String()
}

// ceilSeconds rounds a positive duration up to whole seconds, at least 1;
// zero and negative durations give 0.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}
