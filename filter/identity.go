package filter

import (
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/jwt"
)

// Identity key parts: a JWT claim and any stream property.
//
// Envoy serves a property (proxy_get_property, Context::getProperty in
// source/extensions/common/wasm/context.cc) by walking its path: the
// first segment names an attribute (metadata is the stream's dynamic
// metadata, an envoy.config.core.v3.Metadata message), each further one a
// message field, a map key or a list index, and the leaf is serialized by
// its CEL type (serializeValue): a string as its bytes, an int64, uint64
// or double as 8 little-endian bytes, a bool as 1 byte, a map or a list as
// serialized pairs, a message as its protobuf encoding. An unknown segment
// is NotFound. jwt_authn puts a verified payload, a google.protobuf.Struct,
// in filter_metadata["envoy.filters.http.jwt_authn"] under its provider's
// payload_in_metadata (authenticator.cc, handleGoodJwt; filter.cc,
// setExtractedData), and CEL reads a Struct as a map, a JSON number as a
// double. So ["metadata", "filter_metadata", "envoy.filters.http.jwt_authn",
// "jwt_payload", "sub"] is the claim sub of a verified token, as raw
// bytes for a string claim, and the bytes carry no type: a number claim
// comes back as the 8 bytes of a double.

// property returns a stream property as a string sharing the bytes the
// proxy returned, and whether it is there and not empty.
func (r *request) property(path []string) (string, bool) {
	if r.source == nil {
		return "", false
	}
	b, ok := r.source.PropertyPath(path)
	return bytesString(b), ok && len(b) > 0
}

// jwtClaim reads a jwt_claim part. A token jwt_authn verified gives the
// claim from the dynamic metadata. Without a verified payload there, the
// claim comes from the payload of the Authorization header's bearer
// token, which this filter does not verify; a payload that is there but
// lacks the claim leaves the part missing, so that a second, unverified
// token cannot supply it.
func (r *request) jwtClaim(p *config.KeyPart) (string, bool) {
	if r.source == nil {
		return "", false
	}
	if v, ok := r.source.PropertyPath(p.Path); ok {
		return bytesString(v), len(v) > 0
	}
	// p.Path is the payload's path followed by the claim's segments.
	payload := p.Path[:len(p.Path)-strings.Count(p.Name, ".")-1]
	if _, verified := r.source.PropertyPath(payload); verified {
		return "", false
	}
	b := &r.bearer
	if !b.read {
		// A repeated header is read joined, which is no token: jwt_authn
		// verifies each value, and the claim could come from either.
		auth, _ := r.header("authorization")
		b.json, b.ok = jwt.AppendPayload(b.json[:0], auth)
		b.read = true
	}
	if !b.ok {
		return "", false
	}
	return jwt.Claim(b.json, p.ClaimPath)
}

// bearerPayload is a request's bearer token payload, decoded once for all
// its jwt_claim parts (package jwt). Its buffer outlives the request
// (request.reset).
type bearerPayload struct {
	json []byte
	read bool // the Authorization header has been read
	ok   bool // json is a JSON object, within jsonbound's bounds
}
