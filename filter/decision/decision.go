// Package decision renders what the filter tells the proxy about each
// request it decided: one short line in the stream property
// ratelimit.decision, which Envoy keeps as the filter state
// wasm.ratelimit.decision, for an access log to print
// (%FILTER_STATE(wasm.ratelimit.decision:PLAIN)%; docs/access-log.md):
//
//	rule=api limit=per-second remaining=0 decision=denied reason=rate_limited
//
// Fields, in this order, each only when it applies:
//   - rule, limit: the rule and limit that decided: the denial's, else the
//     most constraining result (algorithms.Tighter);
//   - remaining: that limit's remaining after the request (before it, for
//     a denial), as a call said it: left out when none did (a degraded
//     request the deny cache or a cost above capacity decided);
//   - decision: allowed, denied, would_deny (admitted, but a shadow
//     rule would have denied it: rule and limit are that shadow rule's),
//     or degraded (admitted with an on_limit degrade rule's header: rule
//     and limit are its first spent limit's);
//   - reason: why a request was denied (the local reply's "error":
//     rate_limited, blocked, missing_key, cost_exceeds_capacity,
//     ratelimit_unavailable, unknown_model, unreadable_body,
//     unknown_method, unknown_tool, too_many_keys), or
//     ratelimit_unavailable for a request
//     failure_mode allow admitted;
//   - shadow=true: only shadow rules decided the request;
//   - from: where the decision came from when not from Redis: deny_cache,
//     or local (failure_mode: local).
//
// It is set once per request, at its decision: one host call, unless
// decision_filter_state is false. A request no rule decided gets none, and
// the access log shows "-". Rule and limit names are [A-Za-z0-9_.-], so the line needs no quoting in a text or
// JSON log.
package decision

import "strconv"

// Kind is the decision field.
type Kind uint8

const (
	Allowed Kind = iota
	Denied
	WouldDeny
	Degraded
)

var kindNames = [...]string{Allowed: "allowed", Denied: "denied", WouldDeny: "would_deny", Degraded: "degraded"}

// From is the from field.
type From uint8

const (
	FromRedis From = iota // no field
	FromDenyCache
	FromLocal
)

var fromNames = [...]string{FromDenyCache: "deny_cache", FromLocal: "local"}

// Line is one request's decision: Rule, Limit and Reason empty, and
// Remaining negative, when they do not apply.
type Line struct {
	Rule, Limit string
	Remaining   int64
	Kind        Kind
	Reason      string
	Shadow      bool
	From        From
}

// Append appends l's line to b. It allocates nothing once b has grown.
func Append(b []byte, l *Line) []byte {
	if l.Rule != "" {
		b = append(b, "rule="...)
		b = append(b, l.Rule...)
		if l.Limit != "" {
			b = append(b, " limit="...)
			b = append(b, l.Limit...)
			if l.Remaining >= 0 {
				b = append(b, " remaining="...)
				b = strconv.AppendInt(b, l.Remaining, 10)
			}
		}
		b = append(b, ' ')
	}
	b = append(b, "decision="...)
	b = append(b, kindNames[l.Kind]...)
	if l.Reason != "" {
		b = append(b, " reason="...)
		b = append(b, l.Reason...)
	}
	if l.Shadow {
		b = append(b, " shadow=true"...)
	}
	if l.From != FromRedis {
		b = append(b, " from="...)
		b = append(b, fromNames[l.From]...)
	}
	return b
}
