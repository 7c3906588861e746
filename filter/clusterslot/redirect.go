package clusterslot

// Kind is what a Redis error reply says about the cluster.
type Kind uint8

const (
	None        Kind = iota // not one of the below
	Moved                   // -MOVED slot addr: the slot lives at addr now
	Ask                     // -ASK slot addr: the slot is migrating to addr
	TryAgain                // -TRYAGAIN: a multi-key call during a migration
	ClusterDown             // -CLUSTERDOWN: the slot (or cluster) is not served
)

func (k Kind) String() string {
	switch k {
	case Moved:
		return "MOVED"
	case Ask:
		return "ASK"
	case TryAgain:
		return "TRYAGAIN"
	case ClusterDown:
		return "CLUSTERDOWN"
	}
	return "none"
}

// maxRedirectAddr bounds the address of a -MOVED or -ASK: a host name of
// at most 255 bytes, ':' and a port.
const maxRedirectAddr = 255 + 6

// ParseError reads a Redis error reply's text, with or without its leading
// '-': "MOVED 3999 127.0.0.1:6381", "ASK 3999 host:port", "TRYAGAIN …",
// "CLUSTERDOWN …". slot and addr are set for Moved and Ask only; addr is
// msg's own bytes, as the node wrote it (":6381" when it knows no endpoint
// of the target). A malformed MOVED or ASK (no slot below Slots, no
// address, more after it, a byte in it not printable ASCII) is None.
func ParseError(msg string) (kind Kind, slot uint16, addr string) {
	if len(msg) > 0 && msg[0] == '-' {
		msg = msg[1:]
	}
	msg = trimEOL(msg)
	switch {
	case word(msg, "MOVED"):
		kind, msg = Moved, msg[len("MOVED "):]
	case word(msg, "ASK"):
		kind, msg = Ask, msg[len("ASK "):]
	case word(msg, "TRYAGAIN") || msg == "TRYAGAIN":
		return TryAgain, 0, ""
	case word(msg, "CLUSTERDOWN") || msg == "CLUSTERDOWN":
		return ClusterDown, 0, ""
	default:
		return None, 0, ""
	}
	sp := indexByte(msg, ' ')
	if sp < 0 {
		return None, 0, ""
	}
	n, ok := number(msg[:sp])
	addr = msg[sp+1:]
	if !ok || n >= Slots || addr == "" || len(addr) > maxRedirectAddr || !printable(addr) {
		return None, 0, ""
	}
	return kind, uint16(n), addr
}

// printable reports whether s holds only printable ASCII but space.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// word reports whether s starts with w and a space.
func word(s, w string) bool {
	return len(s) > len(w) && s[:len(w)] == w && s[len(w)] == ' '
}

// trimEOL drops a trailing "\r\n" or "\n".
func trimEOL(s string) string {
	if n := len(s); n > 0 && s[n-1] == '\n' {
		s = s[:n-1]
	}
	if n := len(s); n > 0 && s[n-1] == '\r' {
		s = s[:n-1]
	}
	return s
}

func indexByte(s string, b byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return -1
}

// number reads 1 to 5 decimal digits (a slot or a port), no sign.
func number(s string) (int, bool) {
	if len(s) == 0 || len(s) > 5 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}
