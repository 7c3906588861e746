package config

import (
	"slices"
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

// keyPartFields are the fields a key part may have besides source, by
// source; a field another source takes is refused with the sources
// that allow it. An array, statically laid out: a map would be built at
// every VM's start.
var keyPartFields = [...][]string{
	SourceHeader:   {"name"},
	SourceQuery:    {"name"},
	SourceCookie:   {"name"},
	SourceClientIP: {"ipv4_prefix_len", "ipv6_prefix_len"},
	SourceConstant: {"value"},
	SourceJWTClaim: {"name", "payload_in_metadata"},
	SourceProperty: {"path"},
	SourceBody:     {"path"},
	SourceCall:     {"path"},
}

// JWTAuthnNamespace is the dynamic metadata namespace Envoy's jwt_authn
// filter writes a verified payload under (filter.cc, setExtractedData).
const JWTAuthnNamespace = "envoy.filters.http.jwt_authn"

// maxPropertySegments bounds a property path.
const maxPropertySegments = 16

// parseKeyPart reads one key part, whose source is src; o holds its
// fields by name.
func parseKeyPart(o map[string]jsonvalue.Value, at string, src KeySource) (KeyPart, error) {
	part := KeyPart{Source: src}
	name := sourceNames[src]
	for _, f := range []string{"name", "value", "path", "payload_in_metadata", "ipv4_prefix_len", "ipv6_prefix_len"} {
		if o[f].Exists() && !slices.Contains(keyPartFields[src], f) {
			if f == "name" {
				return part, errAt(at+".name", "not allowed for source %s", name)
			}
			return part, errAt(at+"."+f, "only allowed for source %s", strings.Join(sourcesAllowing(f), " or "))
		}
	}
	var err error
	if part.Name, err = str(o["name"], at+".name", ""); err != nil {
		return part, err
	}
	if part.Value, err = str(o["value"], at+".value", ""); err != nil {
		return part, err
	}
	switch src {
	case SourceHeader, SourceQuery, SourceCookie:
		if part.Name == "" {
			return part, errAt(at+".name", "required for source %s", name)
		}
		if src == SourceHeader {
			part.Name = strings.ToLower(part.Name)
		}
	case SourceConstant:
		if part.Value == "" {
			return part, errAt(at+".value", "required for source constant")
		}
	case SourceClientIP:
		if part.IPv4Prefix, err = prefixLen(o["ipv4_prefix_len"], at+".ipv4_prefix_len", 32); err != nil {
			return part, err
		}
		if part.IPv6Prefix, err = prefixLen(o["ipv6_prefix_len"], at+".ipv6_prefix_len", 128); err != nil {
			return part, err
		}
	case SourceJWTClaim:
		err = parseClaim(&part, o, at)
	case SourceProperty:
		part.Path, err = propertyPath(o["path"], at+".path")
	case SourceBody:
		if !o["path"].Exists() {
			return part, errAt(at+".path", "required for source body")
		}
		part.BodyPath, err = bodyPath(o["path"], at+".path")
	case SourceCall:
		if !o["path"].Exists() {
			return part, errAt(at+".path", "required for source call: a dotted path in the call, such as params.name")
		}
		part.BodyPath, err = callPath(o["path"], at+".path")
		if err == nil && (part.BodyPath == "id" || strings.HasPrefix(part.BodyPath, "id.")) {
			err = errAt(at+".path", "not id: a call's id is the client's own tag, new in each call, so a key on it would give every call a fresh budget")
		}
	}
	return part, err
}

// sourcesAllowing names the sources whose key parts take field f.
func sourcesAllowing(f string) []string {
	var out []string
	for s := SourceHeader; int(s) < len(sourceNames); s++ {
		if slices.Contains(keyPartFields[s], f) {
			out = append(out, sourceNames[s])
		}
	}
	return out
}

func prefixLen(v jsonvalue.Value, path string, max int64) (PrefixLen, error) {
	if !v.Exists() {
		return PrefixLen{}, nil
	}
	n, err := integer(v, path, 0, 0, max)
	return PrefixLen{Bits: int(n), Set: true}, err
}

// parseClaim reads a jwt_claim part: its claim, dotted for a nested one,
// and where jwt_authn put the verified payload.
func parseClaim(part *KeyPart, o map[string]jsonvalue.Value, at string) error {
	if part.Name == "" {
		return errAt(at+".name", "required for source jwt_claim")
	}
	claim := strings.Split(part.Name, ".")
	if slices.Contains(claim, "") || strings.IndexByte(part.Name, 0) >= 0 {
		return errAt(at+".name", `must be a claim name, or a path of them joined by "." ("org.id"), without NUL`)
	}
	key, err := str(o["payload_in_metadata"], at+".payload_in_metadata", "jwt_payload")
	if err != nil {
		return err
	}
	if key == "" || strings.IndexByte(key, 0) >= 0 {
		return errAt(at+".payload_in_metadata", "must be a non-empty string without NUL")
	}
	escaped := make([]string, len(claim))
	for i, c := range claim {
		escaped[i] = jsonvalue.Escape(c)
	}
	part.ClaimPath = strings.Join(escaped, ".")
	part.Path = append([]string{"metadata", "filter_metadata", JWTAuthnNamespace, key}, claim...)
	return nil
}

// propertyPath reads a property path: "source.principal" splits on ".";
// an array gives the segments as they are, for segments with dots such as
// metadata namespaces.
func propertyPath(v jsonvalue.Value, path string) ([]string, error) {
	const want = `must be a dotted string ("connection.uri_san_peer_certificate") or an array of 1 to %d non-empty strings without NUL`
	var segs []string
	switch {
	case !v.Exists():
		return nil, errAt(path, "required for source property")
	case v.Type == jsonvalue.String:
		segs = strings.Split(v.Str, ".")
	case v.IsArray():
		for _, s := range v.Array() {
			if s.Type != jsonvalue.String {
				return nil, errAt(path, want, maxPropertySegments)
			}
			segs = append(segs, s.Str)
		}
	default:
		return nil, errAt(path, want, maxPropertySegments)
	}
	if len(segs) == 0 || len(segs) > maxPropertySegments {
		return nil, errAt(path, want, maxPropertySegments)
	}
	for _, s := range segs {
		if s == "" || strings.IndexByte(s, 0) >= 0 {
			return nil, errAt(path, want, maxPropertySegments)
		}
	}
	return segs, nil
}

// maxHeaderMatches bounds match.headers, and match.body.
const maxHeaderMatches = 16

// parseHeaderMatches reads match.headers: entries that must all hold.
func parseHeaderMatches(v jsonvalue.Value, path string) ([]HeaderMatch, error) {
	return parseValueMatches(v, path, "header", "name", func(n jsonvalue.Value, at string) (string, error) {
		name, err := str(n, at, "")
		if err == nil && name == "" {
			err = errAt(at, "required")
		}
		return strings.ToLower(name), err
	})
}

// parseValueMatches reads a list of matches on what (headers, body
// fields), each naming its value in the field nameField, read by name.
func parseValueMatches(v jsonvalue.Value, path, what, nameField string, name func(jsonvalue.Value, string) (string, error)) ([]HeaderMatch, error) {
	if !v.Exists() {
		return nil, nil
	}
	if !v.IsArray() || len(v.Array()) > maxHeaderMatches {
		return nil, errAt(path, "must be an array of at most %d %s matches", maxHeaderMatches, what)
	}
	var out []HeaderMatch
	for i, e := range v.Array() {
		at := elem(path, i)
		o, err := fields(e, at, nameField, "exact", "prefix", "present", "absent")
		if err != nil {
			return nil, err
		}
		m := HeaderMatch{}
		if m.Name, err = name(o[nameField], at+"."+nameField); err != nil {
			return nil, err
		}
		n := 0
		for _, op := range []string{"exact", "prefix", "present", "absent"} {
			if o[op].Exists() {
				n++
			}
		}
		if n != 1 {
			return nil, errAt(at, "exactly one of exact, prefix, present, absent")
		}
		switch {
		case o["exact"].Exists():
			m.Op = HeaderExact
			m.Value, err = str(o["exact"], at+".exact", "")
		case o["prefix"].Exists():
			m.Op = HeaderPrefix
			if m.Value, err = str(o["prefix"], at+".prefix", ""); err == nil && m.Value == "" {
				err = errAt(at+".prefix", "must not be empty (use present)")
			}
		case o["present"].Exists():
			m.Op = HeaderPresent
			err = mustBeTrue(o["present"], at+".present", "absent")
		default:
			m.Op = HeaderAbsent
			err = mustBeTrue(o["absent"], at+".absent", "present")
		}
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// mustBeTrue accepts only true: false would say the opposite of the
// field's name, which the other field says plainly.
func mustBeTrue(v jsonvalue.Value, path, other string) error {
	b, err := boolean(v, path, false)
	if err == nil && !b {
		err = errAt(path, "must be true (use %s)", other)
	}
	return err
}

// Describe names the part as a refusal's body names a missing one: its
// source, then what it reads ("header x-api-key", "jwt_claim org.id",
// "property connection.uri_san_peer_certificate", "body model",
// "call params.name", "client_ip").
func (p *KeyPart) Describe() string {
	switch p.Source {
	case SourceHeader, SourceQuery, SourceCookie, SourceJWTClaim:
		return p.Source.String() + " " + p.Name
	case SourceProperty:
		return p.Source.String() + " " + strings.Join(p.Path, ".")
	case SourceBody, SourceCall:
		return p.Source.String() + " " + p.BodyPath
	}
	return p.Source.String()
}
