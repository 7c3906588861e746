package clusterslot

// endpoint is a node's address field in CLUSTER NODES,
// "ip:port@bus[,hostname[,aux=value...]]", in pieces of the text.
type endpoint struct {
	ipPort   string // "ip:port"; ip may be empty, or IPv6 without brackets
	port     string
	hostname string // "" if none
}

// parseEndpoint splits an address field. Its ip:port must end in a port.
func parseEndpoint(s string) (ep endpoint, ok bool) {
	rest := ""
	if at := indexByte(s, '@'); at >= 0 {
		ep.ipPort, rest = s[:at], s[at+1:]
	} else if c := indexByte(s, ','); c >= 0 {
		ep.ipPort, rest = s[:c], s[c:]
	} else {
		ep.ipPort = s
	}
	c := lastIndexByte(ep.ipPort, ':')
	if c < 0 {
		return ep, false
	}
	ep.port = ep.ipPort[c+1:]
	if p, ok := number(ep.port); !ok || p == 0 || p > 65535 {
		return ep, false
	}
	if c := indexByte(rest, ','); c >= 0 {
		h := rest[c+1:]
		if e := indexByte(h, ','); e >= 0 {
			h = h[:e]
		}
		if indexByte(h, '=') < 0 { // an aux field (shard-id=…) is no hostname
			ep.hostname = h
		}
	}
	return ep, true
}

// match returns the index of the address ep announces itself as:
// hostname:port first, else ip:port; Unlisted if none.
func (ep *endpoint) match(addrs []string) uint8 {
	if ep.hostname != "" {
		for i, a := range addrs {
			if len(a) == len(ep.hostname)+1+len(ep.port) && a[:len(ep.hostname)] == ep.hostname &&
				a[len(ep.hostname)] == ':' && a[len(ep.hostname)+1:] == ep.port {
				return uint8(i)
			}
		}
	}
	for i, a := range addrs {
		if a == ep.ipPort {
			return uint8(i)
		}
	}
	return Unlisted
}

// String is the endpoint to list in redis.nodes: hostname:port, else
// ip:port.
func (ep *endpoint) String() string {
	if ep.hostname != "" {
		return ep.hostname + ":" + ep.port
	}
	return ep.ipPort
}

func lastIndexByte(s string, b byte) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == b {
			return i
		}
	}
	return -1
}
