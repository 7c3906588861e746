package filter

import (
	"crypto/sha256"
	"encoding/base64"
)

// Redis keys are built from untrusted request data, so every part is
// escaped or hashed:
//
//	<prefix>{<rule>|<part>|<part>...}:<limit index>   one limit's state
//	<prefix>{<rule>|<part>|<part>...}:block           an operator's block
//
// A part keeps the bytes A-Z a-z 0-9 - . _ ~ ! $ & ' ( ) * + , ; = @ / and
// percent-encodes every other byte, so it never holds { } | : # or control
// bytes and distinct values stay distinct. A part whose encoding exceeds
// maxPartLen becomes "#" and 22 base64url characters of its SHA-256's
// first 128 bits. The whole key therefore stays under about 700 bytes, and all keys
// of one rule and key share a hash tag, so one call never spans Redis
// Cluster slots.
const maxPartLen = 64

var safeByte = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=@/") {
		t[c] = true
	}
	return t
}()

// appendKeyPart appends the encoded form of v.
func appendKeyPart(dst []byte, v string) []byte {
	n := 0
	for i := 0; i < len(v) && n <= maxPartLen; i++ {
		if safeByte[v[i]] {
			n++
		} else {
			n += 3
		}
	}
	if n > maxPartLen {
		sum := sha256.Sum256([]byte(v))
		dst = append(dst, '#')
		return base64.RawURLEncoding.AppendEncode(dst, sum[:16])
	}
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(v); i++ {
		c := v[i]
		if safeByte[c] {
			dst = append(dst, c)
		} else {
			dst = append(dst, '%', hex[c>>4], hex[c&15])
		}
	}
	return dst
}

// keyPartValue extracts one part of a rule's key from a request.
func (r *request) keyPartValue(p KeyPart, hops int) (string, bool) {
	switch p.Source {
	case SourceHeader:
		return r.header(p.Name)
	case SourceQuery:
		return r.query(p.Name)
	case SourceCookie:
		return r.cookie(p.Name)
	case SourceClientIP:
		return r.clientIP(hops)
	case SourcePath:
		v := r.path()
		return v, v != ""
	case SourceMethod:
		v := r.method()
		return v, v != ""
	case SourceHost:
		v := r.host()
		return v, v != ""
	case SourceConstant:
		return p.Value, true
	}
	return "", false
}

// appendRuleKey appends the rule's key for a request,
// "<prefix>{<rule>|<parts>}", or reports that a key part is missing under
// MissingSkip or MissingDeny. Everything in braces is the hash tag.
func appendRuleKey(dst []byte, prefix string, rule *Rule, r *request, hops int) ([]byte, bool) {
	dst = append(dst, prefix...)
	dst = append(dst, '{')
	dst = append(dst, rule.Name...)
	for _, p := range rule.Key {
		v, ok := r.keyPartValue(p, hops)
		if !ok && rule.OnMissing != MissingShared {
			return dst, false
		}
		dst = append(dst, '|')
		dst = appendKeyPart(dst, v)
	}
	return append(dst, '}'), true
}

// canonical is the form of a key part's value that goes into the key, as
// a request's would: ratelimitctl passes the values an operator types.
func (p KeyPart) canonical(v string) (string, error) { return v, nil }
