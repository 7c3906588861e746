package ipaddr

import (
	"net/netip"
	"testing"
)

// Any string is read as netip reads it, normalized as the filter keys it
// (Unmap, no zone), and printed the same: as an address, "ip:port" and a
// prefix.
func FuzzParseAgainstNetip(f *testing.F) {
	for _, s := range []string{
		"203.0.113.7", "01.2.3.4", "::", "1::", "::1", "1:2:3:4:5:6:7::", "1:2:3:4:5:6:7::8",
		"::ffff:1.2.3.4", "1::2:3:4:5:1.2.3.4", "fe80::1%eth0", "fe80::1%", "1:0:0:2:0:0:3:4",
		"1.2.3.4:80", "[::1]:0443", "[1.2.3.4]:80", "::1:80", "[fe80::1%x]:65536",
		"203.0.113.9/24", "::ffff:1.2.3.4/120", "fe80::1%x/64", "1.2.3.4/024", "::/129",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, ok := Parse(s)
		want, err := netip.ParseAddr(s)
		if ok != (err == nil) {
			t.Fatalf("Parse(%q): %v; netip: %v", s, ok, err)
		}
		if ok {
			checkSame(t, s, a, want.Unmap().WithZone(""))
		}

		a, port, ok := ParseAddrPort(s)
		wantAP, err := netip.ParseAddrPort(s)
		if ok != (err == nil) {
			t.Fatalf("ParseAddrPort(%q): %v; netip: %v", s, ok, err)
		}
		if ok {
			checkSame(t, s, a, wantAP.Addr().Unmap().WithZone(""))
			if port != wantAP.Port() {
				t.Fatalf("ParseAddrPort(%q): port %d, netip %d", s, port, wantAP.Port())
			}
		}

		a, bits, ok := ParsePrefix(s)
		wantP, err := netip.ParsePrefix(s)
		if ok != (err == nil) {
			t.Fatalf("ParsePrefix(%q): %v; netip: %v", s, ok, err)
		}
		if ok {
			na := wantP.Addr().Unmap()
			wantBits := wantP.Bits()
			if na.Is4() && wantP.Addr().Is6() {
				wantBits -= 96
			}
			checkSame(t, s, a, na)
			if bits != wantBits {
				t.Fatalf("ParsePrefix(%q): %d bits, want %d", s, bits, wantBits)
			}
		}
	})
}

// checkSame fails unless a is want: the same family, bytes and text.
func checkSame(t *testing.T, in string, a Addr, want netip.Addr) {
	t.Helper()
	if a.String() != want.String() || a.Is4() != want.Is4() || a.BitLen() != want.BitLen() {
		t.Fatalf("%q: %s (IPv4 %v), netip %s", in, a, a.Is4(), want)
	}
	if a.fam == 4 && [4]byte(a.ip[:4]) != want.As4() || a.fam == 6 && a.ip != want.As16() {
		t.Fatalf("%q: bytes %x, netip %x", in, a.ip, want.AsSlice())
	}
}

// Any address, masked to any length, prints as netip prints it. zeros
// clears the 16-bit groups its bits name, so runs of zero groups of every
// length and place come up.
func FuzzPrefixAgainstNetip(f *testing.F) {
	f.Add([]byte{32, 1, 13, 184, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6}, uint8(0), 64, false)
	f.Add([]byte{203, 0, 113, 7}, uint8(0), 24, true)
	f.Add([]byte{0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8}, uint8(0b01100110), 128, false)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 1, 2, 3, 4}, uint8(0), 120, false)
	f.Fuzz(func(t *testing.T, raw []byte, zeros uint8, bits int, v4 bool) {
		var b [16]byte
		copy(b[:], raw)
		for g := range 8 {
			if zeros&(1<<g) != 0 {
				b[2*g], b[2*g+1] = 0, 0
			}
		}
		var a Addr
		var want netip.Addr
		if v4 {
			a.fam = 4
			copy(a.ip[:4], b[:4])
			want = netip.AddrFrom4([4]byte(b[:4]))
		} else {
			a = Addr{ip: b, fam: 6}.normal()
			want = netip.AddrFrom16(b).Unmap()
		}
		checkSame(t, "", a, want)
		p, ok := a.Prefix(bits)
		wantP, err := want.Prefix(bits)
		if ok != (err == nil) {
			t.Fatalf("%s.Prefix(%d): %v; netip: %v", a, bits, ok, err)
		}
		if ok {
			if p.String() != wantP.String() || p.Bits() != wantP.Bits() {
				t.Fatalf("%s.Prefix(%d) = %s, netip %s", a, bits, p, wantP)
			}
			checkSame(t, "", p.Addr(), wantP.Addr())
		}
	})
}
