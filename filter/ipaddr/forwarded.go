package ipaddr

import "strings"

// ParseSource parses a proxy's source.address, "ip:port" or a bare IP
// (port 0).
func ParseSource(s string) (Addr, uint16, bool) {
	if ip, port, ok := ParseAddrPort(s); ok {
		return ip, port, true
	}
	ip, ok := Parse(strings.TrimSpace(s))
	return ip, 0, ok
}

// Forwarded is the client address an X-Forwarded-For value gives with
// hops trusted proxies in front, as Envoy computes it with
// use_remote_address and xff_num_trusted_hops: the entry hops places left
// of the last, which must be peer's, the entry this proxy appended. ok is
// false when the last entry is not peer, the chain is shorter, or the
// entry is not an IP.
func Forwarded(xff string, peer Addr, hops int) (Addr, bool) {
	i := strings.LastIndexByte(xff, ',')
	if last, ok := Parse(strings.TrimSpace(xff[i+1:])); !ok || last != peer {
		return Addr{}, false
	}
	rest := xff
	for range hops {
		if i < 0 { // the chain is shorter
			return Addr{}, false
		}
		rest = rest[:i]
		i = strings.LastIndexByte(rest, ',')
	}
	return Parse(strings.TrimSpace(rest[i+1:]))
}
