// Package ipaddr reads and writes client IP addresses as the filter's keys
// hold them. It accepts exactly what net/netip's ParseAddr, ParseAddrPort
// and ParsePrefix accept and prints what netip prints, but every address
// it returns is normalized: an IPv4-mapped IPv6 address is the IPv4
// address, and an IPv6 zone is dropped. It exists so that the shipped
// module does not link net/netip, whose package init (unique handles for
// its zones) costs a VM's start-up about 45 ms in V8.
//
// Parsing is linear in the input and does not allocate.
package ipaddr

import "strings"

// Addr is an IPv4 or IPv6 address, normalized. The zero Addr is no
// address. Addrs compare with ==.
type Addr struct {
	ip  [16]byte // an IPv4 address in ip[:4], the rest zero
	fam uint8    // 0 (none), 4 or 6
}

// IsValid reports whether a is an address, not the zero Addr.
func (a Addr) IsValid() bool { return a.fam != 0 }

// Is4 reports whether a is an IPv4 address (a mapped one included).
func (a Addr) Is4() bool { return a.fam == 4 }

// BitLen is 32 for IPv4, 128 for IPv6, 0 for the zero Addr.
func (a Addr) BitLen() int {
	switch a.fam {
	case 4:
		return 32
	case 6:
		return 128
	}
	return 0
}

// Parse reads an address as netip.ParseAddr does: IPv4 as four decimal
// fields without leading zeros, or IPv6 (with "::", a dotted IPv4 tail and
// a non-empty "%zone" allowed).
func Parse(s string) (Addr, bool) {
	a, _, ok := parse(s)
	return a.normal(), ok
}

// ParseAddrPort reads "ip:port" or "[ipv6]:port" as netip.ParseAddrPort
// does: the port in decimal up to 65535 (leading zeros allowed), IPv6 only
// in brackets and IPv4 never.
func ParseAddrPort(s string) (Addr, uint16, bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 || i == 0 || i == len(s)-1 {
		return Addr{}, 0, false
	}
	host, bracketed := s[:i], s[0] == '['
	if bracketed {
		if len(host) < 2 || host[len(host)-1] != ']' {
			return Addr{}, 0, false
		}
		host = host[1 : len(host)-1]
	}
	port, ok := parsePort(s[i+1:])
	if !ok {
		return Addr{}, 0, false
	}
	a, _, ok := parse(host)
	if !ok || bracketed != (a.fam == 6) {
		return Addr{}, 0, false
	}
	return a.normal(), port, true
}

// ParsePrefix reads "addr/bits" as netip.ParsePrefix does (no zone, bits
// in decimal without leading zeros, at most the family's length). It
// returns the address normalized, not masked, and the length counted in
// its family: "::ffff:a.b.c.d/n" is a.b.c.d with n-96 bits, negative
// when n < 96 (wider than any IPv4 network).
func ParsePrefix(s string) (Addr, int, bool) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return Addr{}, 0, false
	}
	a, zoned, ok := parse(s[:i])
	if !ok || zoned {
		return Addr{}, 0, false
	}
	bits, ok := parseBits(s[i+1:])
	if !ok || bits > a.BitLen() {
		return Addr{}, 0, false
	}
	n := a.normal()
	if n.fam == 4 && a.fam == 6 {
		bits -= 96
	}
	return n, bits, true
}

// Prefix is a network: an address with all but its first bits zero.
type Prefix struct {
	addr Addr
	bits uint8
}

// Prefix is the network of a's first bits, as netip's Addr.Prefix; false
// for the zero Addr or when bits is outside 0..a.BitLen().
func (a Addr) Prefix(bits int) (Prefix, bool) {
	if a.fam == 0 || bits < 0 || bits > a.BitLen() {
		return Prefix{}, false
	}
	for i, left := 0, bits; i < a.BitLen()/8; i, left = i+1, left-8 {
		switch {
		case left <= 0:
			a.ip[i] = 0
		case left < 8:
			a.ip[i] &= 0xff << (8 - left)
		}
	}
	return Prefix{a, uint8(bits)}, true
}

// Addr is p's address, its bits past p.Bits() zero.
func (p Prefix) Addr() Addr { return p.addr }

// Bits is p's length.
func (p Prefix) Bits() int { return int(p.bits) }

// normal is a as the filter keys it: an IPv4-mapped IPv6 address is IPv4.
func (a Addr) normal() Addr {
	if a.fam != 6 || a.ip[10] != 0xff || a.ip[11] != 0xff {
		return a
	}
	for _, b := range a.ip[:10] {
		if b != 0 {
			return a
		}
	}
	var v4 Addr
	v4.fam = 4
	copy(v4.ip[:4], a.ip[12:])
	return v4
}
