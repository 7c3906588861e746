package filter

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
	"github.com/redisrate/envoy-redis-ratelimit/filter/headermap"
	"github.com/redisrate/envoy-redis-ratelimit/filter/jwt"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
)

// keyParts parses a configuration with one rule whose key is key, and
// returns that key's parts.
func keyParts(t *testing.T, key string) []config.KeyPart {
	t.Helper()
	c, err := config.Parse([]byte(`{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":` + key +
		`,"limits":[{"algorithm":"sliding_log","limit":5,"window":"1s"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return c.Rules[0].Key
}

// bearer is an Authorization value holding a token with payload as its
// payload, unsigned: the filter does not verify it.
func bearer(payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return "Bearer " + enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(payload)) + ".c2ln"
}

// bearerClaim reads a claim of the bearer token in an Authorization value.
func bearerClaim(authorization, claim string) (string, bool) {
	payload, ok := jwt.AppendPayload(nil, authorization)
	if !ok {
		return "", false
	}
	return jwt.Claim(payload, claim)
}

// metaKey is a PathProps key: a path's segments joined with NUL.
func metaKey(path ...string) string { return strings.Join(path, "\x00") }

const jwtNS = "metadata\x00filter_metadata\x00envoy.filters.http.jwt_authn\x00"

func TestJWTClaimParsed(t *testing.T) {
	parts := keyParts(t, `[{"source":"jwt_claim","name":"sub"},{"source":"jwt_claim","name":"org.id","payload_in_metadata":"payload"}]`)
	if got := metaKey(parts[0].Path...); got != jwtNS+"jwt_payload\x00sub" {
		t.Errorf("sub: path %q", got)
	}
	if got := metaKey(parts[1].Path...); got != jwtNS+"payload\x00org\x00id" || parts[1].Name != "org.id" {
		t.Errorf("org.id: path %q, name %q", got, parts[1].Name)
	}
}

// A verified payload in jwt_authn's metadata gives the claim; without one,
// the bearer token's payload does; a verified payload without the claim
// leaves it missing, whatever the bearer token says.
func TestJWTClaimSources(t *testing.T) {
	sub := config.KeyPart{Source: config.SourceJWTClaim, Name: "sub", Path: []string{"metadata", "filter_metadata",
		config.JWTAuthnNamespace, "jwt_payload", "sub"}, ClaimPath: "sub"}
	org := config.KeyPart{Source: config.SourceJWTClaim, Name: "org.id", Path: []string{"metadata", "filter_metadata",
		config.JWTAuthnNamespace, "jwt_payload", "org", "id"}, ClaimPath: "org.id"}
	verified := map[string][]byte{
		jwtNS + "jwt_payload":          []byte("(a serialized map)"),
		jwtNS + "jwt_payload\x00sub":   []byte("alice"),
		jwtNS + "jwt_payload\x00other": []byte("x"),
	}
	token := bearer(`{"sub":"mallory","org":{"id":"acme"}}`)
	for _, tc := range []struct {
		name  string
		part  config.KeyPart
		meta  map[string][]byte
		auth  []string
		want  string
		found bool
	}{
		{"metadata", sub, verified, nil, "alice", true},
		{"metadata wins over the token", sub, verified, []string{token}, "alice", true},
		{"verified payload without the claim", org, verified, []string{token}, "", false},
		{"bearer fallback", sub, nil, []string{token}, "mallory", true},
		{"nested claim from the token", org, nil, []string{token}, "acme", true},
		{"no token", sub, nil, nil, "", false},
		{"empty claim in metadata", sub, map[string][]byte{jwtNS + "jwt_payload\x00sub": {}}, nil, "", false},
	} {
		s := filtertest.NewStream("10.0.0.1:5000", nil)
		s.PathProps = tc.meta
		var pairs [][2]string
		for _, a := range tc.auth {
			pairs = append(pairs, [2]string{"authorization", a})
		}
		r := &request{headers: headermap.Append(nil, pairs), source: s}
		if got, ok := r.keyPartValue(tc.part, 0); got != tc.want || ok != tc.found {
			t.Errorf("%s: got %q %v, want %q %v", tc.name, got, ok, tc.want, tc.found)
		}
	}
}

// The bearer token's payload: a string claim as it is, a number or a
// boolean as its JSON text; anything that is not a token jwt_authn would
// extract from Authorization ("Bearer " exactly, three base64url parts)
// is missing.
func TestBearerClaim(t *testing.T) {
	payload := `{"sub":"alice","uid":12345,"big":1.5e3,"admin":true,"off":false,"org":{"id":"acme","a.b":"dotted"},
		"list":["x"],"nil":null,"empty":"","a*b":"star"}`
	tok := bearer(payload)
	for _, tc := range []struct {
		auth, claim, want string
		found             bool
	}{
		{tok, "sub", "alice", true},
		{tok, "uid", "12345", true},
		{tok, "big", "1.5e3", true},
		{tok, "admin", "true", true},
		{tok, "off", "false", true},
		{tok, "org.id", "acme", true},
		{tok, `org.a\.b`, "dotted", true},
		{tok, `a\*b`, "star", true},
		{tok, "org", "", false},
		{tok, "list", "", false},
		{tok, "nil", "", false},
		{tok, "empty", "", false},
		{tok, "missing", "", false},
		{"Bearer   " + strings.TrimPrefix(tok, "Bearer "), "sub", "alice", true},
		{"bearer " + strings.TrimPrefix(tok, "Bearer "), "sub", "", false},
		{"Basic dXNlcjpwYXNz", "sub", "", false},
		{"Bearer", "sub", "", false},
		{"Bearer a.b", "sub", "", false},
		{tok + ".d", "sub", "", false},
		{tok + " ", "sub", "", false},
		{"Bearer x." + base64.RawURLEncoding.EncodeToString([]byte(`["sub"]`)) + ".s", "sub", "", false},
		{"Bearer x." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":`)) + ".s", "sub", "", false},
		{"Bearer x.!!!.s", "sub", "", false},
		{"Bearer x." + base64.URLEncoding.EncodeToString([]byte(`{"sub":"p"}`)) + ".s", "sub", "", false}, // padding: no JWS
	} {
		if got, ok := bearerClaim(tc.auth, tc.claim); got != tc.want || ok != tc.found {
			t.Errorf("%.40q %s: got %q %v, want %q %v", tc.auth, tc.claim, got, ok, tc.want, tc.found)
		}
	}
	// Two Authorization headers: jwt_authn verifies each, and the claim
	// could come from either, so it comes from neither.
	r := &request{headers: headermap.Append(nil, [][2]string{{"authorization", tok}, {"authorization", bearer(`{"sub":"bob"}`)}}),
		source: filtertest.NewStream("10.0.0.1:5000", nil)}
	part := keyParts(t, `[{"source":"jwt_claim","name":"sub"}]`)[0]
	if got, ok := r.keyPartValue(part, 0); ok {
		t.Errorf("repeated authorization: got %q", got)
	}
}

// Claim names with path syntax's special characters (gjson's operators)
// are read literally.
func TestJWTClaimNamesAreLiteral(t *testing.T) {
	part := keyParts(t, `[{"source":"jwt_claim","name":"https://example.com/tenant|x"}]`)[0]
	token := bearer(`{"https://example":{"com/tenant|x":"t1"},"https://example.com/tenant":"wrong"}`)
	r := &request{headers: headermap.Append(nil, [][2]string{{"authorization", token}}), source: filtertest.NewStream("10.0.0.1:5000", nil)}
	if got, ok := r.keyPartValue(part, 0); !ok || got != "t1" {
		t.Errorf("got %q %v", got, ok)
	}
}

// A property part reads the proxy's bytes as they are; a string path
// splits on dots, an array keeps its segments.
func TestPropertyKeyPart(t *testing.T) {
	parts := keyParts(t, `[{"source":"property","path":"connection.uri_san_peer_certificate"},
		{"source":"property","path":["metadata","filter_metadata","envoy.filters.http.ext_authz","tenant"]}]`)
	s := filtertest.NewStream("10.0.0.1:5000", nil)
	s.PathProps = map[string][]byte{
		"connection\x00uri_san_peer_certificate":                                []byte("spiffe://cluster.local/ns/default/sa/web"),
		"metadata\x00filter_metadata\x00envoy.filters.http.ext_authz\x00tenant": []byte("acme"),
	}
	r := &request{source: s}
	for i, want := range []string{"spiffe://cluster.local/ns/default/sa/web", "acme"} {
		if got, ok := r.keyPartValue(parts[i], 0); !ok || got != want {
			t.Errorf("part %d: got %q %v, want %q", i, got, ok, want)
		}
	}
	s.PathProps = map[string][]byte{"connection\x00uri_san_peer_certificate": {}}
	for i := range parts {
		if got, ok := r.keyPartValue(parts[i], 0); ok {
			t.Errorf("part %d: empty or absent property gave %q", i, got)
		}
	}
}

// client_ip with a prefix length keys on the network; requests and
// canonical (what ratelimitctl builds keys with) agree.
func TestClientIPGrouping(t *testing.T) {
	v4 := config.KeyPart{Source: config.SourceClientIP, IPv4Prefix: config.PrefixLen{Bits: 24, Set: true}}
	v6 := config.KeyPart{Source: config.SourceClientIP, IPv6Prefix: config.PrefixLen{Bits: 64, Set: true}}
	both := config.KeyPart{Source: config.SourceClientIP, IPv4Prefix: config.PrefixLen{Bits: 16, Set: true}, IPv6Prefix: config.PrefixLen{Bits: 48, Set: true}}
	all := config.KeyPart{Source: config.SourceClientIP, IPv4Prefix: config.PrefixLen{Bits: 0, Set: true}, IPv6Prefix: config.PrefixLen{Bits: 0, Set: true}}
	whole := config.KeyPart{Source: config.SourceClientIP}
	for _, tc := range []struct {
		part   config.KeyPart
		source string
		want   string
	}{
		{v4, "203.0.113.7:5000", "203.0.113.0/24"},
		{v4, "203.0.113.200:5000", "203.0.113.0/24"},
		{v4, "[::ffff:203.0.113.7]:5000", "203.0.113.0/24"}, // IPv4-mapped counts as IPv4
		{v4, "[2001:db8:1:2::7]:5000", "2001:db8:1:2::7"},   // no IPv6 grouping set
		{v6, "[2001:db8:1:2:3:4:5:6]:5000", "2001:db8:1:2::/64"},
		{v6, "203.0.113.7:5000", "203.0.113.7"},
		{both, "198.51.100.9:1", "198.51.0.0/16"},
		{both, "[2001:db8:abcd:12::1]:1", "2001:db8:abcd::/48"},
		{all, "198.51.100.9:1", "0.0.0.0/0"},
		{all, "[2001:db8::1]:1", "::/0"},
		{config.KeyPart{Source: config.SourceClientIP, IPv4Prefix: config.PrefixLen{Bits: 32, Set: true}}, "198.51.100.9:1", "198.51.100.9/32"},
		{whole, "198.51.100.9:1", "198.51.100.9"},
		{whole, "[::ffff:198.51.100.9]:1", "198.51.100.9"},
	} {
		r := &request{source: peer(tc.source)}
		got, ok := r.keyPartValue(tc.part, 0)
		if !ok || got != tc.want {
			t.Errorf("%+v from %s: got %q %v, want %q", tc.part, tc.source, got, ok, tc.want)
		}
		ip := tc.source[:strings.LastIndexByte(tc.source, ':')]
		if c, err := keyspace.Canonical(&tc.part, strings.Trim(ip, "[]")); err != nil || c != tc.want {
			t.Errorf("canonical(%s) under %+v: %q, %v; want %q", ip, tc.part, c, err, tc.want)
		}
	}
}

func TestClientIPPrefixParsed(t *testing.T) {
	parts := keyParts(t, `[{"source":"client_ip","ipv4_prefix_len":0,"ipv6_prefix_len":64},{"source":"client_ip"}]`)
	if parts[0].IPv4Prefix != (config.PrefixLen{Bits: 0, Set: true}) || parts[0].IPv6Prefix != (config.PrefixLen{Bits: 64, Set: true}) {
		t.Errorf("prefix lengths: %+v", parts[0])
	}
	if parts[1].IPv4Prefix.Set || parts[1].IPv6Prefix.Set {
		t.Errorf("no grouping by default: %+v", parts[1])
	}
}

func TestHeaderMatch(t *testing.T) {
	c, err := config.Parse([]byte(`{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"path"}],
		"match":{"headers":[{"name":"X-Plan","exact":"free"},{"name":"x-debug","present":true},
			{"name":"x-a","prefix":"abc"},{"name":"x-b","absent":true}]},
		"limits":[{"algorithm":"sliding_log","limit":5,"window":"1s"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	m := &c.Rules[0].Match
	base := [][2]string{{":path", "/"}, {"x-plan", "free"}, {"x-debug", ""}, {"x-a", "abcdef"}}
	with := func(change func(h [][2]string) [][2]string) *request {
		h := change(append([][2]string(nil), base...))
		return &request{headers: headermap.Append(nil, h)}
	}
	same := func(h [][2]string) [][2]string { return h }
	for _, tc := range []struct {
		name   string
		change func([][2]string) [][2]string
		want   bool
	}{
		{"all hold", same, true},
		{"names ignore case", func(h [][2]string) [][2]string { h[1][0] = "X-PLAN"; return h }, true},
		{"value is case-sensitive", func(h [][2]string) [][2]string { h[1][1] = "Free"; return h }, false},
		{"exact misses", func(h [][2]string) [][2]string { h[1][1] = "pro"; return h }, false},
		{"repeated header is joined", func(h [][2]string) [][2]string { return append(h, [2]string{"x-plan", "pro"}) }, false},
		{"present misses", func(h [][2]string) [][2]string { return append(h[:2], h[3]) }, false},
		{"prefix misses", func(h [][2]string) [][2]string { h[3][1] = "xabc"; return h }, false},
		{"prefix of joined values", func(h [][2]string) [][2]string { return append(h, [2]string{"x-a", "zzz"}) }, true},
		{"absent misses", func(h [][2]string) [][2]string { return append(h, [2]string{"x-b", ""}) }, false},
	} {
		if got := matches(m, with(tc.change)); got != tc.want {
			t.Errorf("%s: matches %v, want %v", tc.name, got, tc.want)
		}
	}
	joined, err := config.Parse([]byte(`{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"path"}],
		"match":{"headers":[{"name":"x-plan","exact":"free, pro"}]},"limits":[{"algorithm":"sliding_log","limit":5,"window":"1s"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	r := &request{headers: headermap.Append(nil, [][2]string{{"x-plan", "free"}, {"x-plan", "pro"}})}
	if !matches(&joined.Rules[0].Match, r) {
		t.Error("a repeated header is matched on its values joined by \", \"")
	}
}

// A bearer token, however hostile, never panics, and a claim found is
// never empty.
func FuzzBearerClaim(f *testing.F) {
	f.Add(bearer(`{"sub":"alice","org":{"id":"acme"}}`), "org.id")
	f.Add(bearer(`{"sub":1e999}`), "sub")
	f.Add("Bearer ..", "sub")
	f.Add("Bearer a.e30.", `a\*b`)
	f.Fuzz(func(t *testing.T, auth, claim string) {
		if v, ok := bearerClaim(auth, claim); ok && v == "" {
			t.Fatalf("%q %q: an empty claim found", auth, claim)
		}
	})
}
