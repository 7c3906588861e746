package keyspace

import (
	"strconv"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
)

// RuleQuota is one rule of the quota endpoint's answer: its name, and its
// key's state, or Missing when the request has no key for it.
type RuleQuota struct {
	Name    string
	Missing bool
	State   KeyState
}

// AppendQuotaJSON appends the quota endpoint's answer: per rule, its tier or
// override and per limit what a request of cost 1 would find, durations in
// whole seconds rounded up; or "missing_key": true. Its size is bounded:
// at most config.MaxRequestLimits limits, each of bounded names.
//
//	{"rules":[{"rule":"api","tier":"pro","limits":[{"name":"api.minute",
//	"algorithm":"sliding_counter","limit":100,"used":3,"remaining":97,
//	"reset":42,"retry_after":0,"quota":100,"window":60}]},
//	{"rule":"team","missing_key":true}]}
//
// Reset is rendered as given: ResetUnused first gives an unused limit its.
func AppendQuotaJSON(b []byte, rules []RuleQuota) []byte {
	b = append(b, `{"rules":[`...)
	for i := range rules {
		r := &rules[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"rule":`...)
		b = AppendJSONString(b, r.Name)
		if r.Missing {
			b = append(b, `,"missing_key":true}`...)
			continue
		}
		if r.State.Tier != "" {
			b = append(b, `,"tier":`...)
			b = AppendJSONString(b, r.State.Tier)
		}
		if r.State.Override {
			b = append(b, `,"override":true`...)
		}
		b = append(b, `,"limits":[`...)
		for j := range r.State.Limits {
			if j > 0 {
				b = append(b, ',')
			}
			b = appendLimitJSON(b, &r.State.Limits[j])
		}
		b = append(b, "]}"...)
	}
	return append(b, "]}\n"...)
}

// ResetUnused gives each limit that is unused now (used 0, nothing to
// wait for, so Redis says a reset of 0) the reset a client can rely on:
// whatever it spends now is back within it. That is the limit's window
// (a funnel's: its capacity's drain time), or for a calendar limit the
// time left in its period at now. A concurrency limit, with no window,
// keeps 0: no slot is held. A limit of 60 a minute, unused: reset 60.
func ResetUnused(rules []RuleQuota, now time.Time) {
	for i := range rules {
		for j := range rules[i].State.Limits {
			l := &rules[i].State.Limits[j]
			if l.Used != 0 || l.Reset > 0 {
				continue
			}
			l.Reset = l.Window
			if l.Decided.Algorithm == algorithms.CalendarWindow {
				if _, end, err := l.Decided.Calendar.Bounds(now); err == nil {
					l.Reset = end.Sub(now)
				}
			}
		}
	}
}

func appendLimitJSON(b []byte, l *LimitState) []byte {
	b = append(b, `{"name":`...)
	b = AppendJSONString(b, l.Name)
	b = append(b, `,"algorithm":`...)
	b = AppendJSONString(b, l.Algorithm)
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

// AppendJSONString appends s as a JSON string, escaping what JSON needs
// (quotes, backslashes, control bytes); other bytes go as they are.
func AppendJSONString(b []byte, s string) []byte {
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

// ceilSeconds rounds a positive duration up to whole seconds, at least 1;
// zero and negative durations give 0.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}
