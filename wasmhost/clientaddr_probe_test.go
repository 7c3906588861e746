package wasmhost_test

import (
	"net"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// The guest sees source.address, source.port and x-forwarded-for as Envoy's
// connection manager leaves them: read by the probe with
// proxy_get_property, and as the upstream receives the request the guest
// passed on.
func TestClientAddressSeenByGuest(t *testing.T) {
	up := newUpstream(t)
	const peer = "peer" // the test client's own "127.0.0.1:port"
	for _, tc := range []struct {
		name     string
		cfg      wasmhost.Config
		xff      string
		wantAddr string // peer: the TCP peer
		wantXFF  string
	}{
		{"default, no header", wasmhost.Config{}, "", peer, ""},
		{"default trusts the last entry", wasmhost.Config{}, "6.6.6.6, 203.0.113.7", "203.0.113.7:0", "6.6.6.6, 203.0.113.7"},
		{"default, IPv6 entry", wasmhost.Config{}, "2001:db8::7", "[2001:db8::7]:0", "2001:db8::7"},
		{"default, entry not an address", wasmhost.Config{}, "203.0.113.7:80", peer, "203.0.113.7:80"},
		{"use_remote_address", wasmhost.Config{UseRemoteAddress: true, LocalAddress: "192.0.2.1"},
			"6.6.6.6, 203.0.113.7", peer, "6.6.6.6, 203.0.113.7,192.0.2.1"},
		{"use_remote_address, no header", wasmhost.Config{UseRemoteAddress: true, LocalAddress: "192.0.2.1"},
			"", peer, "192.0.2.1"},
		{"one trusted hop", wasmhost.Config{UseRemoteAddress: true, XffNumTrustedHops: 1, LocalAddress: "192.0.2.1"},
			"6.6.6.6, 203.0.113.7", "203.0.113.7:0", "6.6.6.6, 203.0.113.7,192.0.2.1"},
		{"skip_xff_append", wasmhost.Config{UseRemoteAddress: true, SkipXffAppend: true},
			"203.0.113.7", peer, "203.0.113.7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Module, cfg.Upstream, cfg.Workers = module(t, "probe"), up.URL, 1
			h := start(t, cfg)
			headers := map[string]string{}
			if tc.xff != "" {
				headers["X-Forwarded-For"] = tc.xff
			}
			r := do(t, "GET", h.URL()+"/", "", headers)
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			addr, port := r.header.Get("x-prop-source-address"), r.header.Get("x-prop-source-port")
			if tc.wantAddr == peer {
				host, p, err := net.SplitHostPort(addr)
				if err != nil || host != "127.0.0.1" || p == "0" || p != port {
					t.Errorf("source.address %q, source.port %q: want the client's 127.0.0.1:port", addr, port)
				}
			} else if _, wantPort, _ := net.SplitHostPort(tc.wantAddr); addr != tc.wantAddr || port != wantPort {
				t.Errorf("source.address %q, source.port %q: want %q", addr, port, tc.wantAddr)
			}
			if got := strings.Join(r.echo(t).Headers["X-Forwarded-For"], "|"); got != tc.wantXFF {
				t.Errorf("upstream got x-forwarded-for %q, want %q", got, tc.wantXFF)
			}
		})
	}
}
