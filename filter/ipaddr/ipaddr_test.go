package ipaddr

import (
	"net/netip"
	"testing"
)

// Each case's expectation is written out, and netip must agree with it:
// the table is what netip does, normalized as the filter keys addresses.
func TestParse(t *testing.T) {
	for _, tc := range []struct{ in, want string }{ // want "" when refused
		{"203.0.113.7", "203.0.113.7"},
		{"0.0.0.0", "0.0.0.0"},
		{"255.255.255.255", "255.255.255.255"},
		{"01.2.3.4", ""}, {"1.2.3.00", ""}, {"1.2.3.0", "1.2.3.0"},
		{"256.1.1.1", ""}, {"1.2.3.1000", ""},
		{"1..2.3", ""}, {".1.2.3", ""}, {"1.2.3.", ""}, {"1.2.3", ""}, {"1.2.3.4.5", ""},
		{"1.2.3.4%eth0", ""}, {"1.2.3.-4", ""}, {" 1.2.3.4", ""}, {"1.2.3.4 ", ""},
		{"", ""}, {"%eth0", ""}, {"12345", ""}, {"abc", ""},
		{"::", "::"}, {"::%eth0", "::"}, {"1::", "1::"}, {"::1", "::1"},
		{"1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0"},
		{"::2:3:4:5:6:7:8", "0:2:3:4:5:6:7:8"},
		{"1:2:3:4:5:6:7::8", ""}, {"1:2:3:4:5:6:7:8::", ""}, {"::1:2:3:4:5:6:7:8", ""},
		{"1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"}, {"1:2:3:4:5:6:7:8:9", ""}, {"1:2:3:4:5:6:7", ""},
		{"12345::", ""}, {"01234::", ""}, {"0001::", "1::"}, {"ABCD::Ef", "abcd::ef"},
		{":::", ""}, {":1::", ""}, {"1:::2", ""}, {"1::2::3", ""}, {"1:", ""}, {":", ""}, {"1:2", ""},
		{"g::", ""}, {"1::2 ", ""}, {"[::1]", ""},
		{"::1.2.3.4", "::102:304"}, {"1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:102:304"},
		{"1:2:3:4:5:1.2.3.4", ""}, {"1:2:3:4:5:6:7:1.2.3.4", ""}, {"1.2.3.4::", ""},
		{"::1.2.3.4:1", ""}, {"1::2:3:4:5:6:1.2.3.4", ""}, {"1::2:3:4:5:1.2.3.4", "1:0:2:3:4:5:102:304"},
		{"::01.2.3.4", ""}, {"::1a.2.3.4", ""}, {"::1.2.3", ""},
		{"::ffff:203.0.113.7", "203.0.113.7"}, {"::ffff:cb00:7107", "203.0.113.7"},
		{"::FFFF:1.2.3.4%eth0", "1.2.3.4"}, {"0:0:0:0:0:ffff:1.2.3.4", "1.2.3.4"},
		{"::fffe:1.2.3.4", "::fffe:102:304"}, {"1::ffff:1.2.3.4", "1::ffff:102:304"},
		{"fe80::1%eth0", "fe80::1"}, {"fe80::1%", ""}, {"fe80::1%%", "fe80::1"}, {"fe80::1%a%b:c", "fe80::1"},
		// Formatting: the longest run of two or more zero groups, the first on ties.
		{"1:0:2:3:4:5:6:7", "1:0:2:3:4:5:6:7"},
		{"1:0:0:2:3:4:5:6", "1::2:3:4:5:6"},
		{"1:0:0:2:0:0:0:3", "1:0:0:2::3"},
		{"1:0:0:2:0:0:3:4", "1::2:0:0:3:4"},
		{"0:0:1:0:0:0:0:2", "0:0:1::2"},
		{"0:0:0:1:0:0:0:0", "0:0:0:1::"},
		{"0:0:0:1:0:0:0:2", "::1:0:0:0:2"},
		{"1:0:0:0:0:0:0:0", "1::"},
		{"0:1:0:1:0:1:0:1", "0:1:0:1:0:1:0:1"},
		{"2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"},
		{"2001:0DB8:0000:0000:0000:0000:0000:0001", "2001:db8::1"},
	} {
		a, ok := Parse(tc.in)
		got := ""
		if ok {
			got = a.String()
		}
		if got != tc.want || ok != (tc.want != "") || ok != a.IsValid() {
			t.Errorf("Parse(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
		if n := netipString(tc.in); n != tc.want {
			t.Errorf("the table is wrong: netip reads %q as %q", tc.in, n)
		}
	}
}

func netipString(s string) string {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return ""
	}
	return a.Unmap().WithZone("").String()
}

func TestParseAddrPort(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want "" when refused
		port     uint16
	}{
		{"203.0.113.7:8080", "203.0.113.7", 8080},
		{"1.2.3.4:0", "1.2.3.4", 0}, {"1.2.3.4:65535", "1.2.3.4", 65535},
		{"1.2.3.4:65536", "", 0}, {"1.2.3.4:0080", "1.2.3.4", 80}, {"1.2.3.4:000000000000000000001", "1.2.3.4", 1},
		{"1.2.3.4:", "", 0}, {"1.2.3.4", "", 0}, {":80", "", 0}, {"1.2.3.4:+80", "", 0}, {"1.2.3.4:-0", "", 0},
		{"1.2.3.4:8_0", "", 0}, {"1.2.3.4:0x50", "", 0}, {"1.2.3.4: 80", "", 0},
		{"[::1]:443", "::1", 443}, {"[fe80::1%eth0]:80", "fe80::1", 80}, {"[::ffff:1.2.3.4]:80", "1.2.3.4", 80},
		{"::1:443", "", 0}, {"[1.2.3.4]:80", "", 0}, {"[::1:80", "", 0}, {"::1]:80", "", 0},
		{"[]:80", "", 0}, {"[:80", "", 0}, {"[::1]]:80", "", 0}, {"[[::1]]:80", "", 0}, {"[::1]", "", 0},
		{"[::1]:", "", 0}, {"[::1%]:80", "", 0},
	} {
		a, port, ok := ParseAddrPort(tc.in)
		got := ""
		if ok {
			got = a.String()
		}
		if got != tc.want || port != tc.port || ok != (tc.want != "") {
			t.Errorf("ParseAddrPort(%q) = %q, %d, %v; want %q, %d", tc.in, got, port, ok, tc.want, tc.port)
		}
		ap, err := netip.ParseAddrPort(tc.in)
		if (err == nil) != ok || (ok && (ap.Addr().Unmap().WithZone("").String() != tc.want || ap.Port() != tc.port)) {
			t.Errorf("the table is wrong: netip reads %q as %v, %v", tc.in, ap, err)
		}
	}
}

func TestParsePrefix(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want "" when refused
		bits     int
	}{
		{"203.0.113.9/24", "203.0.113.9", 24}, {"1.2.3.4/0", "1.2.3.4", 0}, {"1.2.3.4/32", "1.2.3.4", 32},
		{"1.2.3.4/33", "", 0}, {"1.2.3.4/024", "", 0}, {"1.2.3.4/00", "", 0}, {"1.2.3.4/+8", "", 0},
		{"1.2.3.4/-1", "", 0}, {"1.2.3.4/", "", 0}, {"1.2.3.4", "", 0}, {"/8", "", 0}, {"1.2.3.4/8/8", "", 0},
		{"1.2.3.4/99999999999999999999999", "", 0},
		{"2001:db8::/32", "2001:db8::", 32}, {"::/0", "::", 0}, {"::1/128", "::1", 128}, {"::1/129", "", 0},
		{"fe80::1%eth0/64", "", 0},
		{"::ffff:203.0.113.9/120", "203.0.113.9", 24}, {"::ffff:1.2.3.4/128", "1.2.3.4", 32},
		{"::ffff:1.2.3.4/96", "1.2.3.4", 0}, {"::ffff:1.2.3.4/80", "1.2.3.4", -16},
	} {
		a, bits, ok := ParsePrefix(tc.in)
		got := ""
		if ok {
			got = a.String()
		}
		if got != tc.want || bits != tc.bits || ok != (tc.want != "") {
			t.Errorf("ParsePrefix(%q) = %q, %d, %v; want %q, %d", tc.in, got, bits, ok, tc.want, tc.bits)
		}
		if _, err := netip.ParsePrefix(tc.in); (err == nil) != ok {
			t.Errorf("the table is wrong: netip reads %q with error %v", tc.in, err)
		}
	}
}

func TestPrefix(t *testing.T) {
	for _, tc := range []struct {
		in   string
		bits int
		want string // "" when refused
	}{
		{"203.0.113.7", 24, "203.0.113.0/24"}, {"203.0.113.7", 32, "203.0.113.7/32"},
		{"203.0.113.7", 0, "0.0.0.0/0"}, {"203.0.113.255", 25, "203.0.113.128/25"},
		{"203.0.113.7", 33, ""}, {"203.0.113.7", -1, ""},
		{"2001:db8:1:2:3:4:5:6", 64, "2001:db8:1:2::/64"}, {"2001:db8:1:2:3:4:5:6", 128, "2001:db8:1:2:3:4:5:6/128"},
		{"2001:db8:ffff::", 33, "2001:db8:8000::/33"}, {"::1", 0, "::/0"}, {"ffff::", 1, "8000::/1"},
		{"::1", 129, ""}, {"::ffff:10.1.2.3", 8, "10.0.0.0/8"},
	} {
		a, _ := Parse(tc.in)
		p, ok := a.Prefix(tc.bits)
		got := ""
		if ok {
			got = p.String()
		}
		if got != tc.want {
			t.Errorf("%s.Prefix(%d) = %q, %v; want %q", tc.in, tc.bits, got, ok, tc.want)
		}
	}
	if _, ok := (Addr{}).Prefix(0); ok {
		t.Error("the zero Addr has a prefix")
	}
	if s := (Addr{}).String(); s != "invalid IP" {
		t.Errorf("the zero Addr prints %q", s)
	}
}

// Addresses compare with ==, as the filter compares X-Forwarded-For's last
// entry with the peer: normalized, a mapped address and a zoned one equal
// their plain forms.
func TestEqual(t *testing.T) {
	for _, pair := range [][2]string{{"::ffff:1.2.3.4", "1.2.3.4"}, {"fe80::1%eth0", "FE80:0::1"}} {
		a, _ := Parse(pair[0])
		b, _ := Parse(pair[1])
		if a != b || !a.IsValid() {
			t.Errorf("%s != %s", pair[0], pair[1])
		}
	}
	a, _ := Parse("::1.2.3.4")
	b, _ := Parse("1.2.3.4")
	if a == b || a.Is4() || !b.Is4() || a.BitLen() != 128 || b.BitLen() != 32 {
		t.Errorf("::1.2.3.4 and 1.2.3.4: %v, %v", a, b)
	}
}

func TestParseDoesNotAllocate(t *testing.T) {
	n := testing.AllocsPerRun(100, func() {
		Parse("2001:db8::1.2.3.4%eth0")
		Parse("203.0.113.7")
		ParseAddrPort("[fe80::1%eth0]:8080")
		ParsePrefix("::ffff:203.0.113.9/120")
	})
	if n != 0 {
		t.Errorf("%v allocations per parse", n)
	}
}
