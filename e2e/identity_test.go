package e2e

// Identity keys (issue 13, point 3) through the compiled modules: a JWT
// claim from jwt_authn's dynamic metadata and from the bearer token, a
// peer certificate's URI SAN, client addresses grouped by network, and
// rules matched on header values.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// token is an unsigned JWS with payload as its payload and sig as its
// signature part, which fakeJWTAuthn reads as its verdict.
func token(payload, sig string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + enc([]byte(payload)) + "." + sig
}

// fakeJWTAuthn stands for Envoy's jwt_authn filter in front of the guest,
// with payload_in_metadata "jwt_payload" and forward false: a bearer token
// signed "good" is verified, its payload goes to the dynamic metadata and
// the token is removed from the request. Other tokens pass untouched, as
// if jwt_authn were not configured for them.
func fakeJWTAuthn(t *testing.T) func(r *http.Request) wasmhost.StreamInfo {
	return func(r *http.Request) wasmhost.StreamInfo {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		parts := strings.Split(tok, ".")
		if !ok || len(parts) != 3 || parts[2] != "good" {
			return wasmhost.StreamInfo{}
		}
		raw, err := base64.RawURLEncoding.DecodeString(parts[1])
		var payload map[string]any
		if err == nil {
			err = json.Unmarshal(raw, &payload)
		}
		if err != nil {
			t.Errorf("fake jwt_authn: %v", err)
			return wasmhost.StreamInfo{}
		}
		r.Header.Del("Authorization")
		return wasmhost.StreamInfo{Metadata: map[string]map[string]any{
			"envoy.filters.http.jwt_authn": {"jwt_payload": payload},
		}}
	}
}

// oneRule is a configuration with one rule allowing 2 requests a minute
// per key; extra goes into the rule (a "match", say).
func oneRule(prefix, name, key, extra string) string {
	return fmt.Sprintf(`{"redis":{"cluster":"redis","key_prefix":%q},"rules":[{"name":%q,"key":%s,%s
		"limits":[{"algorithm":"sliding_log","limit":2,"window":"1m"}]}]}`, prefix, name, key, extra)
}

// send sends GET / from c with the headers (name, value pairs) and
// returns the status.
func send(t *testing.T, c *http.Client, h *wasmhost.Host, headers ...string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", h.URL()+"/", nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// stateKeyParts returns the key parts of the state keys under prefix, sorted
// and without repeats: "per-sub|alice" is the rule and its part.
func stateKeyParts(t *testing.T, prefix string) []string {
	t.Helper()
	keys, err := server.Client.Strings("KEYS", prefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range keys {
		m := keyShape.FindStringSubmatch(k)
		if m == nil {
			t.Fatalf("unexpected key %q", k)
		}
		out = append(out, m[2])
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// step is a request, its headers as name, value pairs, and the status it
// must get.
type step struct {
	what    string
	headers []string
	status  int
}

// runSteps sends the steps' requests in order from c, checking each.
func runSteps(t *testing.T, c *http.Client, h *wasmhost.Host, steps []step) {
	t.Helper()
	for _, s := range steps {
		if got := send(t, c, h, s.headers...); got != s.status {
			t.Fatalf("%s: status %d, want %d", s.what, got, s.status)
		}
	}
}

// A jwt_claim part reads the claim of the token jwt_authn verified, from
// the dynamic metadata, even when the token is gone from the request;
// without a verified token it reads the bearer token's payload.
func TestJWTClaimKeys(t *testing.T) {
	alice, bob := token(`{"sub":"alice","org":{"id":"acme"}}`, "good"), token(`{"sub":"bob"}`, "good")
	carol := token(`{"sub":"carol","uid":12345}`, "unsigned")
	for _, build := range moduleKinds {
		t.Run(build, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			config := fmt.Sprintf(`{"redis":{"cluster":"redis","key_prefix":%q},"rules":[
				{"name":"per-sub","key":[{"source":"jwt_claim","name":"sub"}],"limits":[{"algorithm":"sliding_log","limit":2,"window":"1m"}]},
				{"name":"per-org","key":[{"source":"jwt_claim","name":"org.id"}],"limits":[{"algorithm":"sliding_log","limit":3,"window":"1m"}]},
				{"name":"per-uid","key":[{"source":"jwt_claim","name":"uid"}],"limits":[{"algorithm":"sliding_log","limit":5,"window":"1m"}]}]}`, prefix)
			h := startBuild(t, build, wasmhost.Config{StreamInfo: fakeJWTAuthn(t), UseRemoteAddress: true}, config, server.Addr).h
			c := http.DefaultClient
			runSteps(t, c, h, []step{
				{"alice 1", []string{"Authorization", "Bearer " + alice}, 200},
				{"alice 2", []string{"Authorization", "Bearer " + alice}, 200},
				{"alice 3", []string{"Authorization", "Bearer " + alice}, 429},
				{"bob, own key", []string{"Authorization", "Bearer " + bob}, 200},
				{"carol, unverified bearer 1", []string{"Authorization", "Bearer " + carol}, 200},
				{"carol 2", []string{"Authorization", "Bearer " + carol}, 200},
				{"carol 3", []string{"Authorization", "Bearer " + carol}, 429},
				{"no token: not limited", nil, 200},
				{"no token again", nil, 200},
				{"no token again", nil, 200},
			})
			want := []string{"per-org|acme", "per-sub|alice", "per-sub|bob", "per-sub|carol", "per-uid|12345"}
			if got := stateKeyParts(t, prefix); !slices.Equal(got, want) {
				t.Fatalf("keys %q, want %q", got, want)
			}
		})
	}
}

// A verified payload wins over a bearer token jwt_authn left in place
// (forward: true, or another location): the key is the verified subject.
func TestJWTClaimMetadataWinsOverBearer(t *testing.T) {
	prefix := redistest.Prefix(t)
	verified := func(r *http.Request) wasmhost.StreamInfo {
		return wasmhost.StreamInfo{Metadata: map[string]map[string]any{
			"envoy.filters.http.jwt_authn": {"payload": map[string]any{"sub": "alice"}},
		}}
	}
	h := startBuild(t, "higress", wasmhost.Config{StreamInfo: verified, UseRemoteAddress: true},
		oneRule(prefix, "per-sub", `[{"source":"jwt_claim","name":"sub","payload_in_metadata":"payload"}]`, ""), server.Addr).h
	mallory := "Bearer " + token(`{"sub":"mallory"}`, "forged")
	runSteps(t, http.DefaultClient, h, []step{
		{"1", []string{"Authorization", mallory}, 200},
		{"2", []string{"Authorization", token(`{"sub":"eve"}`, "x")}, 200},
		{"3: both were alice", nil, 429},
	})
	if got := stateKeyParts(t, prefix); !slices.Equal(got, []string{"per-sub|alice"}) {
		t.Fatalf("keys %q", got)
	}
}

// A property part keys on the client certificate's first URI SAN, as
// Envoy serves connection.uri_san_peer_certificate; a connection without
// a certificate has none, and the rule skips it.
func TestPeerCertificateKeys(t *testing.T) {
	prefix := redistest.Prefix(t)
	// x-test-workload stands for the certificate the client presented.
	mtls := func(r *http.Request) wasmhost.StreamInfo {
		sa := r.Header.Get("x-test-workload")
		r.Header.Del("x-test-workload")
		if sa == "" {
			return wasmhost.StreamInfo{TLS: &wasmhost.TLSInfo{Version: "TLSv1.3"}}
		}
		return wasmhost.StreamInfo{TLS: &wasmhost.TLSInfo{Version: "TLSv1.3", Peer: &wasmhost.PeerCertificate{
			URISANs: []string{"spiffe://cluster.local/ns/default/sa/" + sa}}}}
	}
	h := startBuild(t, "higress", wasmhost.Config{StreamInfo: mtls, UseRemoteAddress: true},
		oneRule(prefix, "per-workload", `[{"source":"property","path":"connection.uri_san_peer_certificate"}]`, ""), server.Addr).h
	runSteps(t, http.DefaultClient, h, []step{
		{"web 1", []string{"x-test-workload", "web"}, 200},
		{"web 2", []string{"x-test-workload", "web"}, 200},
		{"web 3", []string{"x-test-workload", "web"}, 429},
		{"batch", []string{"x-test-workload", "batch"}, 200},
		{"no certificate", nil, 200},
		{"no certificate", nil, 200},
		{"no certificate", nil, 200},
	})
	// ":" is percent-encoded in a key.
	want := []string{"per-workload|spiffe%3A//cluster.local/ns/default/sa/batch", "per-workload|spiffe%3A//cluster.local/ns/default/sa/web"}
	if got := stateKeyParts(t, prefix); !slices.Equal(got, want) {
		t.Fatalf("keys %q, want %q", got, want)
	}
}

// With ipv4_prefix_len 24, two clients of one /24 share a limit; a client
// of another /24 has its own.
func TestClientNetworkKeys(t *testing.T) {
	for _, build := range moduleKinds {
		t.Run(build, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			h := startBuild(t, build, wasmhost.Config{UseRemoteAddress: true},
				oneRule(prefix, "per-net", `[{"source":"client_ip","ipv4_prefix_len":24,"ipv6_prefix_len":64}]`, ""), server.Addr).h
			a, b, other := clientFrom(t, "127.0.0.2"), clientFrom(t, "127.0.0.3"), clientFrom(t, "127.0.1.2")
			runSteps(t, a, h, []step{{"127.0.0.2", nil, 200}})
			runSteps(t, b, h, []step{{"127.0.0.3, same /24", nil, 200}})
			runSteps(t, a, h, []step{{"127.0.0.2 again: the /24 is spent", nil, 429}})
			runSteps(t, other, h, []step{{"127.0.1.2, another /24", nil, 200}})
			want := []string{"per-net|127.0.0.0/24", "per-net|127.0.1.0/24"}
			if got := stateKeyParts(t, prefix); !slices.Equal(got, want) {
				t.Fatalf("keys %q, want %q", got, want)
			}
		})
	}
}

// A rule with match.headers applies only to the requests whose headers
// all hold: x-plan exactly "free" and no x-debug.
func TestHeaderMatchRule(t *testing.T) {
	prefix := redistest.Prefix(t)
	h := startBuild(t, "higress", wasmhost.Config{UseRemoteAddress: true}, oneRule(prefix, "free-plan", `[{"source":"constant","value":"all"}]`,
		`"match":{"headers":[{"name":"X-Plan","exact":"free"},{"name":"x-debug","absent":true}]},`), server.Addr).h
	c := http.DefaultClient
	runSteps(t, c, h, []step{
		{"free 1", []string{"x-plan", "free"}, 200},
		{"pro: not matched", []string{"x-plan", "pro"}, 200},
		{"free with x-debug: not matched", []string{"x-plan", "free", "x-debug", "1"}, 200},
		{"free and pro, joined: not matched", []string{"x-plan", "free", "x-plan", "pro"}, 200},
		{"free 2", []string{"X-PLAN", "free"}, 200},
		{"free 3", []string{"x-plan", "free"}, 429},
		{"pro still", []string{"x-plan", "pro"}, 200},
		{"no header", nil, 200},
	})
}
