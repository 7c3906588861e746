package wasmhost

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// This file does to each request what Envoy's HTTP connection manager does
// before any filter runs: it picks the downstream address that becomes the
// source.address property and rewrites x-forwarded-for. It follows
// source/common/http/conn_manager_utility.cc (mutateRequestHeaders),
// source/common/http/utility.cc (getLastAddressFromXFF, appendXff) and
// source/common/network/utility.cc (isLoopbackAddress, getLocalAddress).

// mutateRequestHeaders rewrites m as Envoy's connection manager does and
// returns the downstream address, "ip:port" (port 0 when it was taken from
// x-forwarded-for). peer is the TCP peer. It also adds x-forwarded-proto
// and x-request-id, as the connection manager does after XFF.
func (c *Config) mutateRequestHeaders(peer string, m *headerMap) string {
	xff, hasXFF := coalesceXFF(m)
	remote, ok := parsePeer(peer)
	hops := c.XffNumTrustedHops
	final := peer
	if c.UseRemoteAddress {
		// With trusted proxies in front, the client is in XFF as they left
		// it, before this proxy appends its own peer.
		if hops > 0 {
			if a, found := lastAddressFromXFF(xff, hasXFF, hops-1); found {
				final = a.String()
			}
		}
		if ok && !c.SkipXffAppend {
			appended := remote.Addr()
			if isEnvoyLoopback(appended) {
				appended = c.localAddr
			}
			appendXFF(m, appended.String())
		}
		// The peer is not trusted to set the scheme unless hops are trusted.
		if _, set := m.get("x-forwarded-proto"); hops == 0 || !set {
			m.replace("x-forwarded-proto", "http")
		}
		// Every request is an edge request: since Envoy 1.33 no address is
		// internal unless internal_address_config says so. Envoy then sets
		// a new x-request-id (preserve_external_request_id: false).
		m.replace("x-request-id", newUUID())
		return final
	}
	if a, found := lastAddressFromXFF(xff, hasXFF, hops); found {
		final = a.String()
	}
	if _, set := m.get("x-forwarded-proto"); !set {
		m.add("x-forwarded-proto", "http")
	}
	if _, set := m.get("x-request-id"); !set {
		m.add("x-request-id", newUUID())
	}
	return final
}

// coalesceXFF joins repeated x-forwarded-for headers into the first, with
// ",", skipping empty values: Envoy keeps it as one inline header, and its
// codecs append each repeat to it (HeaderMapImpl::insertByKey).
func coalesceXFF(m *headerMap) (string, bool) {
	first := -1
	var joined string
	out := m.pairs[:0]
	for _, p := range m.pairs {
		if p[0] != "x-forwarded-for" {
			out = append(out, p)
			continue
		}
		if first < 0 {
			first = len(out)
			joined = p[1]
			out = append(out, p)
		} else if p[1] != "" {
			if joined != "" {
				joined += ","
			}
			joined += p[1]
		}
	}
	m.pairs = out
	if first < 0 {
		return "", false
	}
	m.pairs[first][1] = joined
	return joined, true
}

// appendXFF appends ip to x-forwarded-for with ",", or sets it.
func appendXFF(m *headerMap, ip string) {
	for i, p := range m.pairs {
		if p[0] == "x-forwarded-for" {
			if p[1] != "" {
				ip = p[1] + "," + ip
			}
			m.pairs[i][1] = ip
			return
		}
	}
	m.add("x-forwarded-for", ip)
}

// lastAddressFromXFF is Envoy's getLastAddressFromXFF: skip the last skip
// entries, then parse the one before them, trimmed, as an IP address (no
// port, no brackets). A missing header, too few entries or an entry that
// is not an address give false. The address has port 0.
func lastAddressFromXFF(xff string, present bool, skip int) (netip.AddrPort, bool) {
	if !present {
		return netip.AddrPort{}, false
	}
	s := xff
	for range skip {
		i := strings.LastIndexByte(s, ',')
		if i < 0 {
			return netip.AddrPort{}, false
		}
		s = s[:i]
	}
	// Envoy takes the text after the last comma, unless the comma ends the
	// string: then the whole remainder, which does not parse.
	if i := strings.LastIndexByte(s, ','); i >= 0 && i+1 < len(s) {
		s = s[i+1:]
	}
	s = strings.Trim(s, " \t\f\v\n\r")
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(a, 0), true
}

// parsePeer parses the TCP peer as net/http reports it.
func parsePeer(peer string) (netip.AddrPort, bool) {
	ap, err := netip.ParseAddrPort(peer)
	return ap, err == nil
}

// isEnvoyLoopback is Network::Utility::isLoopbackAddress: exactly
// 127.0.0.1 or ::1, not the rest of 127.0.0.0/8.
func isEnvoyLoopback(a netip.Addr) bool {
	return a == netip.AddrFrom4([4]byte{127, 0, 0, 1}) || a == netip.IPv6Loopback()
}

// envoyLocalAddress is what Envoy's local_info address defaults to
// (Network::Utility::getLocalAddress, IPv4): the first IPv4 interface
// address that is not 127.0.0.1, else 127.0.0.1.
func envoyLocalAddress() netip.Addr {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ipn.IP)
		if ok && ip.Unmap().Is4() && !isEnvoyLoopback(ip.Unmap()) {
			return ip.Unmap()
		}
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1})
}

// setAddressDefaults checks the connection manager settings and resolves
// LocalAddress.
func (c *Config) setAddressDefaults() error {
	if c.XffNumTrustedHops < 0 {
		return fmt.Errorf("host: Config.XffNumTrustedHops %d: must be >= 0", c.XffNumTrustedHops)
	}
	if c.LocalAddress == "" {
		c.localAddr = envoyLocalAddress()
		return nil
	}
	a, err := netip.ParseAddr(c.LocalAddress)
	if err != nil || a.Zone() != "" {
		return fmt.Errorf("host: bad Config.LocalAddress %q: want an IP address", c.LocalAddress)
	}
	c.localAddr = a
	return nil
}
