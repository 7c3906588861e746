package filter

import (
	"strconv"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
)

// sendQuota answers the endpoint's request: 200 and what each rule's key
// has left, or, when a call failed, failure_status (whatever failure_mode
// says: this request has no upstream to fail open to) and
// {"error":"ratelimit_unavailable"}. Either carries the rate-limit
// headers of the rules that decided the request itself.
func (s *Stream) sendQuota() {
	q, cfg := s.quota, s.pol.cfg
	var headers [][2]string
	if s.hasVerdict && cfg.Headers != config.HeadersNone {
		headers = s.appendRateLimitHeaders(headers, &s.verdict)
	}
	headers = append(headers, [2]string{"content-type", "application/json"}, [2]string{"cache-control", "no-store"})
	if q.err != nil {
		s.host.SendLocalReply(cfg.FailureStatus, headers, []byte(`{"error":"`+reasonUnavailable.String()+`"}`+"\n"))
		return
	}
	s.host.SendLocalReply(200, headers, appendQuotaJSON(nil, cfg, q.rules))
}

// appendQuotaJSON appends the endpoint's answer: per rule, its tier or
// override and per limit what a request of cost 1 would find, durations in
// whole seconds rounded up; or "missing_key": true. Its size is bounded:
// at most config.MaxRequestLimits limits, each of bounded names.
//
//	{"rules":[{"rule":"api","tier":"pro","limits":[{"name":"api.minute",
//	"algorithm":"sliding_counter","limit":100,"used":3,"remaining":97,
//	"reset":42,"retry_after":0,"quota":100,"window":60}]},
//	{"rule":"team","missing_key":true}]}
func appendQuotaJSON(b []byte, cfg *config.Config, rules []quotaRule) []byte {
	b = append(b, `{"rules":[`...)
	for i := range rules {
		r := &rules[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"rule":`...)
		b = appendJSONString(b, cfg.Rules[r.rule].Name)
		if r.missing {
			b = append(b, `,"missing_key":true}`...)
			continue
		}
		if r.state.Tier != "" {
			b = append(b, `,"tier":`...)
			b = appendJSONString(b, r.state.Tier)
		}
		if r.state.Override {
			b = append(b, `,"override":true`...)
		}
		b = append(b, `,"limits":[`...)
		for j := range r.state.Limits {
			if j > 0 {
				b = append(b, ',')
			}
			b = appendLimitJSON(b, &r.state.Limits[j])
		}
		b = append(b, "]}"...)
	}
	return append(b, "]}\n"...)
}

func appendLimitJSON(b []byte, l *keyspace.LimitState) []byte {
	b = append(b, `{"name":`...)
	b = appendJSONString(b, l.Name)
	b = append(b, `,"algorithm":`...)
	b = appendJSONString(b, l.Algorithm)
	for _, f := range [...]struct {
		name string
		v    int64
	}{
		{"limit", l.Limit}, {"used", l.Used}, {"remaining", l.Remaining},
		{"reset", ceilSeconds(l.Reset)}, {"retry_after", ceilSeconds(l.RetryAfter)},
		{"quota", l.Quota}, {"window", ceilSeconds(l.Window)},
	} {
		b = append(b, `,"`...)
		b = append(b, f.name...)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, f.v, 10)
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string. The names it writes are
// configuration names (A-Z a-z 0-9 _ . -), but it escapes what JSON needs.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
