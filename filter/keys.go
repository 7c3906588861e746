package filter

import (
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
)

// keyPartValue extracts one part of a rule's key from a request.
func (r *request) keyPartValue(p config.KeyPart, hops int) (string, bool) {
	switch p.Source {
	case config.SourceHeader:
		return r.header(p.Name)
	case config.SourceQuery:
		return r.query(p.Name)
	case config.SourceCookie:
		return r.cookie(p.Name)
	case config.SourceClientIP:
		ip, ok := r.clientAddr(hops)
		if !ok {
			return "", false
		}
		return keyspace.GroupIP(&p, ip), true
	case config.SourcePath:
		v := r.path()
		return v, v != ""
	case config.SourceMethod:
		v := r.method()
		return v, v != ""
	case config.SourceHost:
		v := r.host()
		return v, v != ""
	case config.SourceConstant:
		return p.Value, true
	case config.SourceJWTClaim:
		return r.jwtClaim(&p)
	case config.SourceProperty:
		return r.property(p.Path)
	case config.SourceBody:
		v, _ := r.bodyValue(p.BodyPath)
		return v, v != ""
	}
	return "", false
}

// appendRuleKey appends the rule's key for a request,
// "<prefix>{<rule>|<parts>}", or reports that a key part is missing under
// MissingSkip or MissingDeny. Everything in braces is the hash tag.
func appendRuleKey(dst []byte, prefix string, rule *config.Rule, r *request, hops int) ([]byte, bool) {
	return appendCallKey(dst, prefix, rule, r, hops, "")
}

// appendCallKey is appendRuleKey for one JSON-RPC call, whose object is
// call ("" for none: its parts are missing). A rule with call parts keys
// "<prefix>{<rule>|<request parts>}|<call parts>}": only the request's
// parts are in the hash tag, so one caller's calls share a slot.
func appendCallKey(dst []byte, prefix string, rule *config.Rule, r *request, hops int, call string) ([]byte, bool) {
	dst, ok := appendRequestKey(dst, prefix, rule, r, hops)
	if !ok {
		return dst, false
	}
	return appendCallParts(dst, rule, r, call)
}

// appendRequestKey appends "<prefix>{<rule>|<request parts>}", the key
// without its call parts, or reports a missing part.
func appendRequestKey(dst []byte, prefix string, rule *config.Rule, r *request, hops int) ([]byte, bool) {
	dst = append(dst, prefix...)
	dst = append(dst, '{')
	dst = append(dst, rule.Name...)
	for _, p := range rule.Key {
		if p.Source == config.SourceCall {
			continue
		}
		v, ok := r.keyPartValue(p, hops)
		if !ok && rule.OnMissing != config.MissingShared {
			return dst, false
		}
		dst = append(dst, '|')
		dst = keyspace.AppendPart(dst, v)
	}
	return append(dst, '}'), true
}

// appendCallParts appends "|<call parts>}" of a rule with call parts,
// read from call, or reports a missing part; nothing for a rule without.
func appendCallParts(dst []byte, rule *config.Rule, r *request, call string) ([]byte, bool) {
	n := 0
	for _, p := range rule.Key {
		if p.Source != config.SourceCall {
			continue
		}
		v, _ := r.callValue(call, p.BodyPath) // as a body part: "" is missing
		if v == "" && rule.OnMissing != config.MissingShared {
			return dst, false
		}
		dst = append(dst, '|')
		dst = keyspace.AppendPart(dst, v)
		n++
	}
	if n == 0 {
		return dst, true
	}
	return append(dst, '}'), true
}
