// Package jwt reads the payload of an Authorization header's bearer
// token, a JWS in compact form, for its claims. It does not verify the
// token: jwt_authn does, and a claim it verified comes from the stream's
// metadata instead. The payload is checked by package jsonbound before
// package jsonvalue reads a claim.
package jwt

import (
	"bytes"
	"encoding/base64"
	"strings"
	"unsafe"

	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

// MaxToken bounds the token read, in bytes: 8 KiB, the header line
// many proxies and servers accept at most (nginx's
// large_client_header_buffers), holds any token an identity provider
// issues. A longer one is no token: its claims are missing, and its
// payload is never decoded.
const MaxToken = 8 << 10

// AppendPayload appends the JSON payload of the bearer token in an
// Authorization value, "Bearer <header>.<payload>.<signature>", and
// reports whether there is one: a JSON object nested at most
// jsonbound.MaxDepth deep, in a token of at most MaxToken bytes. The
// prefix is "Bearer " exactly, as jwt_authn's default location is
// (extractor.cc, JwtConstValues BearerPrefix): a token jwt_authn would not
// extract, and so not verify, is not read either.
func AppendPayload(dst []byte, authorization string) ([]byte, bool) {
	token, ok := strings.CutPrefix(authorization, "Bearer ")
	if !ok {
		return dst, false
	}
	token = strings.TrimLeft(token, " ")
	if len(token) > MaxToken || strings.Trim(token, base64URLAndDot) != "" {
		return dst, false
	}
	_, rest, ok1 := strings.Cut(token, ".")
	payload, sig, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(sig, ".") {
		return dst, false
	}
	start := len(dst)
	dst, err := base64.RawURLEncoding.AppendDecode(dst, stringBytes(payload))
	if err != nil {
		return dst[:start], false
	}
	doc := bytes.TrimLeft(dst[start:], " \t\r\n")
	if !jsonbound.Valid(doc) || doc[0] != '{' {
		return dst[:start], false
	}
	return dst, true
}

// Claim returns the claim at path (jsonvalue.Get's, names escaped) of a token's
// payload: a string claim as it is, a number or a boolean as its JSON
// text. Any other claim, and an empty or absent one, is missing. The
// payload is within jsonbound's bounds; jsonvalue.Get reads it once,
// without recursion.
func Claim(payload []byte, path string) (string, bool) {
	switch c := jsonvalue.Get(bytesString(payload), path); c.Type {
	case jsonvalue.String:
		return c.Str, c.Str != ""
	case jsonvalue.Number, jsonvalue.True, jsonvalue.False:
		return c.Raw, true
	}
	return "", false
}

// base64URLAndDot are the bytes of a JWS in compact form.
const base64URLAndDot = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."

func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
