package filter

import (
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/headermap"
)

func TestRuleKeyKeepsRulesAndUsersApart(t *testing.T) {
	rule := &config.Rule{Name: "api", Key: []config.KeyPart{{Source: config.SourceHeader, Name: "x-user"}, {Source: config.SourcePath}}}
	key := func(user, path string) string {
		t.Helper()
		r := &request{headers: headermap.Append(nil, [][2]string{{":path", path}, {"x-user", user}})}
		b, ok := appendRuleKey(nil, "rl:", rule, r, 0)
		if !ok {
			t.Fatalf("missing part for %q %q", user, path)
		}
		return string(b)
	}
	if got := key("u1", "/a?x=1"); got != "rl:{api|u1|/a}" {
		t.Fatalf("key = %q", got)
	}
	// "u1|/a" as a user id cannot forge user u1 on path /a.
	if key("u1|/a", "/") == key("u1", "/a|/") || key("u1", "/a") == key("u1|", "/a") {
		t.Fatal("separator injection")
	}
	if strings.Count(key("}{evil", "/{x}"), "{") != 1 {
		t.Fatal("a brace reached the key")
	}
	missing := &request{headers: headermap.Append(nil, [][2]string{{":path", "/"}})}
	if _, ok := appendRuleKey(nil, "rl:", rule, missing, 0); ok {
		t.Fatal("missing header accepted under skip")
	}
	rule.OnMissing = config.MissingShared
	b, ok := appendRuleKey(nil, "rl:", rule, missing, 0)
	if !ok || string(b) != "rl:{api||/}" {
		t.Fatalf("shared: %q %v", b, ok)
	}
}

func TestRequestSources(t *testing.T) {
	r := &request{
		headers: headermap.Append(nil, [][2]string{
			{":method", "POST"}, {":path", "/v1/items?tenant=acme%20co&x=1&tenant=other"},
			{":authority", "API.example.com:8443"}, {"cookie", "a=1; session=s3cr3t; b=2"},
			{"x-id", "one"}, {"X-Id", "two"},
		}),
		source: peer("[2001:db8::1]:5555"),
	}
	for _, tc := range []struct {
		part config.KeyPart
		want string
		ok   bool
	}{
		{config.KeyPart{Source: config.SourceMethod}, "POST", true},
		{config.KeyPart{Source: config.SourcePath}, "/v1/items", true},
		{config.KeyPart{Source: config.SourceHost}, "api.example.com", true},
		{config.KeyPart{Source: config.SourceQuery, Name: "tenant"}, "acme co", true},
		{config.KeyPart{Source: config.SourceQuery, Name: "missing"}, "", false},
		{config.KeyPart{Source: config.SourceCookie, Name: "session"}, "s3cr3t", true},
		{config.KeyPart{Source: config.SourceCookie, Name: "sess"}, "", false},
		{config.KeyPart{Source: config.SourceHeader, Name: "x-id"}, "one, two", true},
		{config.KeyPart{Source: config.SourceClientIP}, "2001:db8::1", true},
		{config.KeyPart{Source: config.SourceConstant, Value: "all"}, "all", true},
	} {
		got, ok := r.keyPartValue(tc.part, 0)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%+v: got %q %v, want %q %v", tc.part, got, ok, tc.want, tc.ok)
		}
	}
}

// clientIP follows Envoy's use_remote_address: true: this proxy appended
// its peer (10.0.0.9) to X-Forwarded-For, and hops counts the trusted
// proxies left of it. The header is read only when that append is visible.
func TestClientIPTrustedHops(t *testing.T) {
	for _, tc := range []struct {
		source string // source.address
		xff    []string
		hops   int
		want   string
	}{
		{"10.0.0.9:1234", nil, 0, "10.0.0.9"},
		{"10.0.0.9:1234", []string{"1.1.1.1,10.0.0.9"}, 0, "10.0.0.9"}, // untrusted header ignored
		{"10.0.0.9:1234", []string{"6.6.6.6, 1.1.1.1,10.0.0.9"}, 1, "1.1.1.1"},
		{"10.0.0.9:1234", []string{"6.6.6.6, 1.1.1.1, 10.0.0.2,10.0.0.9"}, 2, "1.1.1.1"},
		{"10.0.0.9:1234", []string{"6.6.6.6", "1.1.1.1", "10.0.0.9"}, 1, "1.1.1.1"}, // repeated headers join in order
		{"[2001:db8::9]:1234", []string{"2001:db8::1, 2001:db8::9"}, 1, "2001:db8::1"},
		{"10.0.0.9:1234", []string{"::ffff:1.2.3.4,10.0.0.9"}, 1, "1.2.3.4"},
		{"10.0.0.9:1234", []string{"fe80::1%eth0,10.0.0.9"}, 1, "fe80::1"},
		{"10.0.0.9:1234", []string{"1.1.1.1,::ffff:10.0.0.9"}, 1, "1.1.1.1"},
		// One hop too many with the old reading (N-th from the right) is
		// the load balancer itself; here it is the client.
		{"10.0.0.9:1234", []string{"198.51.100.7,10.0.0.9"}, 1, "198.51.100.7"},

		{"10.0.0.9:1234", []string{"10.0.0.9"}, 1, "10.0.0.9"},         // shorter than the trusted hops
		{"10.0.0.9:1234", []string{"1.1.1.1,10.0.0.9"}, 2, "10.0.0.9"}, // shorter than the trusted hops
		{"10.0.0.9:1234", []string{"not-an-ip, 1.1.1.1,10.0.0.9"}, 2, "10.0.0.9"},
		{"10.0.0.9:1234", []string{"1.2.3.4:80,10.0.0.9"}, 1, "10.0.0.9"}, // an entry with a port is not an IP
		{"10.0.0.9:1234", []string{"1.1.1.1,"}, 1, "10.0.0.9"},
		// Not appended by this proxy: the last entry is not the peer (a
		// loopback peer, for which Envoy appends its own address, or
		// skip_xff_append), so the client wrote it.
		{"10.0.0.9:1234", []string{"6.6.6.6"}, 1, "10.0.0.9"},
		{"10.0.0.9:1234", []string{"6.6.6.6, 7.7.7.7"}, 1, "10.0.0.9"},
		{"127.0.0.1:1234", []string{"6.6.6.6,192.0.2.2"}, 1, "127.0.0.1"},
		// source.address came from X-Forwarded-For (port 0): the proxy
		// already applied its trusted hops, or trusted the header with
		// use_remote_address: false; either way its answer stands.
		{"1.1.1.1:0", []string{"6.6.6.6, 1.1.1.1"}, 1, "1.1.1.1"},
		{"1.1.1.1:0", []string{"6.6.6.6, 1.1.1.1, 10.0.0.9"}, 1, "1.1.1.1"},
		{"[2001:db8::1]:0", []string{"6.6.6.6, 2001:db8::1"}, 1, "2001:db8::1"},
		{"10.0.0.9", []string{"6.6.6.6,10.0.0.9"}, 1, "10.0.0.9"}, // no port: not known to be the peer
	} {
		var pairs [][2]string
		for _, x := range tc.xff {
			pairs = append(pairs, [2]string{"x-forwarded-for", x})
		}
		r := &request{source: peer(tc.source), headers: headermap.Append(nil, pairs)}
		if got, ok := r.clientIP(tc.hops); !ok || got != tc.want {
			t.Errorf("source %s, xff %q, hops %d: got %q %v, want %q", tc.source, tc.xff, tc.hops, got, ok, tc.want)
		}
	}
	for _, bad := range []string{"", "unknown", "pipe:/tmp/x"} {
		r := &request{source: peer(bad)}
		if got, ok := r.clientIP(1); ok {
			t.Errorf("source %q: got %q, want no client IP", bad, got)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// peer is a StreamHost that only knows its downstream address.
type peer string

func (p peer) SourceAddress() string                 { return string(p) }
func (peer) Property(string) string                  { return "" }
func (peer) PropertyPath([]string) ([]byte, bool)    { return nil, false }
func (peer) Resume()                                 {}
func (peer) SendLocalReply(int, [][2]string, []byte) {}
func (peer) AddResponseHeader(string, string)        {}
func (peer) SetDecision([]byte)                      {}
