package ipaddr

import "strings"

// parse reads s as netip.ParseAddr does. The address is as written (an
// IPv4-mapped one still IPv6); zoned says s had a "%zone", which is
// dropped. The first '.', ':' or '%' of s picks the syntax.
func parse(s string) (a Addr, zoned, ok bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '.':
			if !parse4(s, a.ip[:4]) {
				return Addr{}, false, false
			}
			a.fam = 4
			return a, false, true
		case ':':
			return parse6(s)
		case '%': // a zone without an address
			return Addr{}, false, false
		}
	}
	return Addr{}, false, false
}

// parse4 reads a dotted IPv4 address into dst: four fields of 1 to 3
// digits, each at most 255, with no leading zero but a lone "0".
func parse4(s string, dst []byte) bool {
	n, val, digits := 0, 0, 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			if digits == 0 || n == 4 {
				return false
			}
			dst[n] = byte(val)
			n, val, digits = n+1, 0, 0
			continue
		}
		c := s[i]
		if c < '0' || c > '9' || (digits > 0 && val == 0) {
			return false
		}
		val, digits = val*10+int(c-'0'), digits+1
		if val > 255 {
			return false
		}
	}
	return n == 4
}

// parse6 reads an IPv6 address: groups of 1 to 4 hex digits separated by
// ':', at most one "::" standing for one or more zero groups, and a
// dotted IPv4 tail in place of the last two groups; then an optional
// non-empty "%zone".
func parse6(s string) (a Addr, zoned, ok bool) {
	if i := strings.IndexByte(s, '%'); i >= 0 {
		if i == len(s)-1 {
			return Addr{}, false, false
		}
		s, zoned = s[:i], true
	}
	ip := &a.ip
	n, gap := 0, -1 // bytes written; where "::" stands, or -1
	if len(s) >= 2 && s[0] == ':' && s[1] == ':' {
		gap, s = 0, s[2:]
	}
	for n < 16 && s != "" {
		val, digits := 0, 0
		for digits < len(s) && digits <= 4 {
			h := unhex(s[digits])
			if h < 0 {
				break
			}
			val, digits = val<<4|h, digits+1
		}
		if digits == 0 || digits > 4 {
			return Addr{}, false, false
		}
		if digits < len(s) && s[digits] == '.' { // the IPv4 tail
			if (gap < 0 && n != 12) || n+4 > 16 || !parse4(s, ip[n:n+4]) {
				return Addr{}, false, false
			}
			n, s = n+4, ""
			break
		}
		ip[n], ip[n+1] = byte(val>>8), byte(val)
		n, s = n+2, s[digits:]
		if s == "" {
			break
		}
		if s[0] != ':' || len(s) == 1 {
			return Addr{}, false, false
		}
		s = s[1:]
		if s[0] == ':' {
			if gap >= 0 {
				return Addr{}, false, false
			}
			gap, s = n, s[1:]
		}
	}
	switch {
	case s != "": // a ninth group, or more
		return Addr{}, false, false
	case n < 16:
		if gap < 0 {
			return Addr{}, false, false
		}
		k := 16 - n
		copy(ip[gap+k:], ip[gap:n])
		clear(ip[gap : gap+k])
	case gap >= 0: // "::" standing for no group
		return Addr{}, false, false
	}
	a.fam = 6
	return a, zoned, true
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// parsePort reads a port as strconv.ParseUint(s, 10, 16) does: decimal
// digits only, leading zeros allowed, at most 65535.
func parsePort(s string) (uint16, bool) {
	v, ok := parseDecimal(s, 65535)
	return uint16(v), ok
}

// parseBits reads a prefix length as netip.ParsePrefix does: "0", or
// decimal digits without a leading zero. Anything above 128 is refused.
func parseBits(s string) (int, bool) {
	if len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	return parseDecimal(s, 128)
}

// parseDecimal reads 1 or more decimal digits worth at most max.
func parseDecimal(s string, max int) (int, bool) {
	if s == "" {
		return 0, false
	}
	v := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v = v*10 + int(c-'0'); v > max {
			return 0, false
		}
	}
	return v, true
}
