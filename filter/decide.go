package filter

import (
	"strconv"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
)

// decide turns the calls' outcomes into the stream's verdict and acts on it.
func (s *Stream) decide() {
	s.decided = true
	m := &s.p.metrics
	var deny, tightest *verdict
	failed := false
	for _, c := range s.calls {
		if c.err != nil {
			failed = failed || !c.shadow
			continue
		}
		d := &c.decision
		if d.Blocked {
			b := c.blockers[d.BlockedBy]
			m.rules[b.rule].blocked.Increment(1)
			if !c.shadow && deny == nil {
				deny = &verdict{rule: b.rule, limit: -1, reason: "blocked", blocked: true, blockedFor: d.BlockedFor}
				if d.BlockedFor > 0 {
					s.p.denied.store(b.tag, 0, s.p.host.Now().Add(d.BlockedFor), *deny)
				}
			}
			continue
		}
		start := 0
		for start < len(c.owners) {
			ri := c.owners[start].rule
			end := start
			ruleAllowed := true
			for end < len(c.owners) && c.owners[end].rule == ri {
				ruleAllowed = ruleAllowed && d.Results[end].Allowed
				end++
			}
			switch {
			case ruleAllowed:
				m.rules[ri].allowed.Increment(1)
			case c.shadow:
				m.rules[ri].shadowDenied.Increment(1)
			default:
				m.rules[ri].denied.Increment(1)
			}
			start = end
		}
		if c.shadow {
			continue
		}
		for i, o := range c.owners {
			s.policies = append(s.policies, s.policy(o))
			v := &verdict{rule: o.rule, limit: o.limit, result: d.Results[i], reason: "rate_limited"}
			if tightest == nil || tighterVerdict(v, tightest) {
				tightest = v
			}
			if r := d.Results[i]; !r.Allowed && r.RetryAfter > 0 {
				s.p.denied.store(o.tag, o.cost, s.p.host.Now().Add(r.RetryAfter), *v)
			}
		}
	}
	if deny == nil && tightest != nil && !tightest.result.Allowed {
		deny = tightest
	}
	if deny == nil && failed {
		if s.p.cfg.FailOpen {
			m.failOpen.Increment(1)
		} else {
			m.failClosed.Increment(1)
			deny = &verdict{rule: -1, limit: -1, reason: "ratelimit_unavailable"}
		}
	}
	if deny != nil {
		s.reject(deny)
		return
	}
	s.allowed, s.verdict = true, tightest
	if !s.inHeaders {
		s.host.Resume()
	}
}

func tighterVerdict(v, than *verdict) bool {
	d := algorithms.Decision{Results: []algorithms.Result{than.result, v.result}}
	return d.Tightest() == 1
}

// countDenial counts a denial answered from the deny cache.
func (s *Stream) countDenial(v verdict) {
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
		body = append(body, `,"retry_after":`+strconv.FormatInt(ceilSeconds(retry), 10)...)
	}
	body = append(body, "}\n"...)
	s.host.SendLocalReply(status, headers, body)
	return Pause
}

// OnResponseHeaders adds the rate-limit headers to an admitted response.
func (s *Stream) OnResponseHeaders() Action {
	if s.allowed && s.verdict != nil {
		for _, h := range s.appendRateLimitHeaders(nil, s.verdict) {
			s.host.AddResponseHeader(h[0], h[1])
		}
	}
	return Continue
}

// OnDone ends the stream; replies still in flight will be ignored.
func (s *Stream) OnDone() {
	for _, c := range s.calls {
		s.p.untrack(c)
	}
	s.decided = true
}

// policy renders one limit for RateLimit-Policy: "name";q=100;w=60.
func (s *Stream) policy(o owner) string {
	l := &s.p.cfg.Rules[o.rule].Limits[o.limit]
	q, w := l.Limit.Policy()
	return `"` + l.Name + `";q=` + strconv.FormatInt(q, 10) + ";w=" + strconv.FormatInt(ceilSeconds(w), 10)
}

// appendRateLimitHeaders renders v in the configured header style.
func (s *Stream) appendRateLimitHeaders(h [][2]string, v *verdict) [][2]string {
	style := s.p.cfg.Headers
	if style == HeadersNone {
		return h
	}
	l := &s.p.cfg.Rules[v.rule].Limits[v.limit]
	r := v.result
	t := r.ResetAfter
	if !r.Allowed {
		t = r.RetryAfter
	}
	secs := strconv.FormatInt(ceilSeconds(t), 10)
	remaining := strconv.FormatInt(r.Remaining, 10)
	if style == HeadersDraft10 || style == HeadersBoth {
		policies := s.policies
		if len(policies) == 0 {
			policies = []string{s.policy(owner{rule: v.rule, limit: v.limit})}
		}
		h = append(h, [2]string{"ratelimit-policy", joinComma(policies)},
			[2]string{"ratelimit", `"` + l.Name + `";r=` + remaining + ";t=" + secs})
	}
	if style == HeadersLegacy || style == HeadersBoth {
		q, _ := l.Limit.Policy()
		h = append(h, [2]string{"x-ratelimit-limit", strconv.FormatInt(q, 10)},
			[2]string{"x-ratelimit-remaining", remaining},
			[2]string{"x-ratelimit-reset", secs})
	}
	return h
}

func joinComma(items []string) string {
	out := ""
	for i, it := range items {
		if i > 0 {
			out += ", "
		}
		out += it
	}
	return out
}

// ceilSeconds rounds a positive duration up to whole seconds, at least 1;
// zero and negative durations give 0.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}
