package ipaddr

import "testing"

func TestForwarded(t *testing.T) {
	peer, _ := Parse("10.0.0.9")
	for _, tc := range []struct {
		xff  string
		hops int
		want string // "" when not ok
	}{
		{"1.1.1.1, 10.0.0.9", 1, "1.1.1.1"},
		{"9.9.9.9,1.1.1.1, 2.2.2.2 ,10.0.0.9", 2, "1.1.1.1"},
		{"1.1.1.1, 10.0.0.9", 2, ""}, // shorter than hops
		{"1.1.1.1, 10.0.0.8", 1, ""}, // the last entry is not the peer
		{"junk, 10.0.0.9", 1, ""},    // not an IP
		{"::ffff:1.1.1.1,10.0.0.9", 1, "1.1.1.1"},
	} {
		got, ok := Forwarded(tc.xff, peer, tc.hops)
		if want := tc.want != ""; ok != want || ok && got.String() != tc.want {
			t.Errorf("Forwarded(%q, %d) = %v %v, want %q", tc.xff, tc.hops, got, ok, tc.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { Forwarded("1.1.1.1, 10.0.0.9", peer, 1) }); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}
