package wasmhost

import "testing"

// The first six cases are the examples of Envoy's documentation
// (docs/root/configuration/http/http_conn_man/headers.rst, x-forwarded-for);
// the others follow conn_manager_utility.cc and utility.cc.
func TestMutateRequestHeadersAddress(t *testing.T) {
	const chain = "203.0.113.128, 203.0.113.10, 203.0.113.1"
	for _, tc := range []struct {
		name    string
		ura     bool // use_remote_address
		hops    int
		skip    bool // skip_xff_append
		peer    string
		xff     []string // as the client sent them; nil: none
		want    string   // source.address
		wantXFF string   // "" with noXFF: no header
		noXFF   bool
	}{
		{name: "edge, no trusted proxy", ura: true, peer: "192.0.2.5:4000", xff: []string{chain},
			want: "192.0.2.5:4000", wantXFF: chain + ",192.0.2.5"},
		{name: "internal behind that edge", peer: "10.11.12.13:4000", xff: []string{chain + ",192.0.2.5"},
			want: "192.0.2.5:0", wantXFF: chain + ",192.0.2.5"},
		{name: "edge, two trusted proxies", ura: true, hops: 2, peer: "192.0.2.5:4000", xff: []string{chain},
			want: "203.0.113.10:0", wantXFF: chain + ",192.0.2.5"},
		{name: "internal, two trusted hops", hops: 2, peer: "10.11.12.13:4000", xff: []string{chain + ",192.0.2.5"},
			want: "203.0.113.10:0", wantXFF: chain + ",192.0.2.5"},
		{name: "internal with use_remote_address", ura: true, peer: "10.11.12.13:4000", xff: []string{chain + ",192.0.2.5"},
			want: "10.11.12.13:4000", wantXFF: chain + ",192.0.2.5,10.11.12.13"},
		{name: "internal with use_remote_address, one hop", ura: true, hops: 1, peer: "10.11.12.13:4000", xff: []string{chain + ",192.0.2.5"},
			want: "192.0.2.5:0", wantXFF: chain + ",192.0.2.5,10.11.12.13"},

		{name: "default, no header", peer: "192.0.2.5:4000", want: "192.0.2.5:4000", noXFF: true},
		{name: "default trusts the client's header", peer: "192.0.2.5:4000", xff: []string{"6.6.6.6"},
			want: "6.6.6.6:0", wantXFF: "6.6.6.6"},
		{name: "edge, no header", ura: true, peer: "192.0.2.5:4000", want: "192.0.2.5:4000", wantXFF: "192.0.2.5"},
		{name: "edge, empty header", ura: true, peer: "192.0.2.5:4000", xff: []string{""}, want: "192.0.2.5:4000", wantXFF: "192.0.2.5"},
		{name: "loopback peer appends the local address", ura: true, peer: "127.0.0.1:4000", xff: []string{"6.6.6.6"},
			want: "127.0.0.1:4000", wantXFF: "6.6.6.6,10.9.8.7"},
		{name: "IPv6 loopback peer", ura: true, peer: "[::1]:4000", want: "[::1]:4000", wantXFF: "10.9.8.7"},
		{name: "127.0.0.2 is not loopback to Envoy", ura: true, peer: "127.0.0.2:4000", want: "127.0.0.2:4000", wantXFF: "127.0.0.2"},
		{name: "IPv6 peer", ura: true, peer: "[2001:db8::7]:4000", want: "[2001:db8::7]:4000", wantXFF: "2001:db8::7"},
		{name: "skip_xff_append", ura: true, skip: true, peer: "192.0.2.5:4000", xff: []string{"6.6.6.6"},
			want: "192.0.2.5:4000", wantXFF: "6.6.6.6"},
		{name: "hops longer than the chain", ura: true, hops: 2, peer: "192.0.2.5:4000", xff: []string{"6.6.6.6"},
			want: "192.0.2.5:4000", wantXFF: "6.6.6.6,192.0.2.5"},
		{name: "hops longer than the chain, default", hops: 1, peer: "192.0.2.5:4000", xff: []string{"6.6.6.6"},
			want: "192.0.2.5:4000", wantXFF: "6.6.6.6"},
		{name: "entry with a port", peer: "192.0.2.5:4000", xff: []string{"1.2.3.4:80"}, want: "192.0.2.5:4000", wantXFF: "1.2.3.4:80"},
		{name: "bracketed IPv6", peer: "192.0.2.5:4000", xff: []string{"[2001:db8::1]"}, want: "192.0.2.5:4000", wantXFF: "[2001:db8::1]"},
		{name: "IPv6 scope", peer: "192.0.2.5:4000", xff: []string{"fe80::1%eth0"}, want: "192.0.2.5:4000", wantXFF: "fe80::1%eth0"},
		{name: "trailing comma", peer: "192.0.2.5:4000", xff: []string{"1.2.3.4,"}, want: "192.0.2.5:4000", wantXFF: "1.2.3.4,"},
		{name: "not an address", peer: "192.0.2.5:4000", xff: []string{"1.2.3.4, unknown"}, want: "192.0.2.5:4000", wantXFF: "1.2.3.4, unknown"},
		{name: "whitespace trimmed", peer: "192.0.2.5:4000", xff: []string{"6.6.6.6,\t1.2.3.4 "}, want: "1.2.3.4:0", wantXFF: "6.6.6.6,\t1.2.3.4 "},
		{name: "IPv6 entry", peer: "192.0.2.5:4000", xff: []string{"2001:db8::1"}, want: "[2001:db8::1]:0", wantXFF: "2001:db8::1"},
		{name: "IPv4-mapped entry", peer: "192.0.2.5:4000", xff: []string{"::ffff:1.2.3.4"}, want: "[::ffff:1.2.3.4]:0", wantXFF: "::ffff:1.2.3.4"},
		{name: "repeated headers join", peer: "192.0.2.5:4000", xff: []string{"1.1.1.1", "", "2.2.2.2, 3.3.3.3"}, hops: 1,
			want: "2.2.2.2:0", wantXFF: "1.1.1.1,2.2.2.2, 3.3.3.3"},
		{name: "repeated headers join, edge", ura: true, hops: 1, peer: "192.0.2.5:4000", xff: []string{"1.1.1.1", "2.2.2.2"},
			want: "2.2.2.2:0", wantXFF: "1.1.1.1,2.2.2.2,192.0.2.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{UseRemoteAddress: tc.ura, XffNumTrustedHops: tc.hops, SkipXffAppend: tc.skip, LocalAddress: "10.9.8.7"}
			if err := c.setAddressDefaults(); err != nil {
				t.Fatal(err)
			}
			m := newHeaderMap([][2]string{{":path", "/"}, {"accept", "*/*"}})
			for _, v := range tc.xff {
				m.add("x-forwarded-for", v)
			}
			m.add("z-last", "1")
			if got := c.mutateRequestHeaders(tc.peer, m); got != tc.want {
				t.Errorf("source.address %q, want %q", got, tc.want)
			}
			var xff []string
			for _, p := range m.pairs {
				if p[0] == "x-forwarded-for" {
					xff = append(xff, p[1])
				}
			}
			switch {
			case tc.noXFF && len(xff) != 0:
				t.Errorf("x-forwarded-for %q, want none", xff)
			case !tc.noXFF && (len(xff) != 1 || xff[0] != tc.wantXFF):
				t.Errorf("x-forwarded-for %q, want one header %q", xff, tc.wantXFF)
			}
			if len(tc.xff) > 0 && m.pairs[2][0] != "x-forwarded-for" {
				t.Errorf("x-forwarded-for moved: %q", m.pairs)
			}
		})
	}
}

// x-forwarded-proto and x-request-id: kept from the client unless the
// request is an edge one (use_remote_address), where Envoy overwrites the
// scheme when no hop is trusted, and always sets a new request id.
func TestMutateRequestHeadersProtoAndRequestID(t *testing.T) {
	for _, tc := range []struct {
		ura       bool
		hops      int
		wantProto string
		keepID    bool
	}{
		{false, 0, "https", true},
		{true, 0, "http", false},
		{true, 1, "https", false},
	} {
		c := Config{UseRemoteAddress: tc.ura, XffNumTrustedHops: tc.hops}
		if err := c.setAddressDefaults(); err != nil {
			t.Fatal(err)
		}
		m := newHeaderMap([][2]string{{"x-forwarded-proto", "https"}, {"x-request-id", "client-chosen"}})
		c.mutateRequestHeaders("192.0.2.5:4000", m)
		proto, _ := m.get("x-forwarded-proto")
		id, _ := m.get("x-request-id")
		n := 2 // and x-forwarded-for, appended at the edge
		if tc.ura {
			n++
		}
		if proto != tc.wantProto || (id == "client-chosen") != tc.keepID || len(m.pairs) != n {
			t.Errorf("use_remote_address %v, hops %d: x-forwarded-proto %q, x-request-id %q (%d headers)", tc.ura, tc.hops, proto, id, len(m.pairs))
		}
		m = newHeaderMap(nil)
		c.mutateRequestHeaders("192.0.2.5:4000", m)
		if p, _ := m.get("x-forwarded-proto"); p != "http" {
			t.Errorf("x-forwarded-proto %q, want http when absent", p)
		}
		if id, ok := m.get("x-request-id"); !ok || len(id) != 36 {
			t.Errorf("x-request-id %q, want a new UUID when absent", id)
		}
	}
}

func TestLocalAddressDefault(t *testing.T) {
	c := Config{}
	if err := c.setAddressDefaults(); err != nil {
		t.Fatal(err)
	}
	if !c.localAddr.Is4() || c.localAddr != envoyLocalAddress() {
		t.Errorf("local address %v", c.localAddr)
	}
	t.Logf("local address: %v", c.localAddr)
	if err := (&Config{LocalAddress: "not-an-ip"}).setAddressDefaults(); err == nil {
		t.Error("a bad LocalAddress was accepted")
	}
	if err := (&Config{XffNumTrustedHops: -1}).setAddressDefaults(); err == nil {
		t.Error("negative XffNumTrustedHops was accepted")
	}
}
