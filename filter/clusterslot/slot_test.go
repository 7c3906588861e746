package clusterslot

import (
	"strings"
	"testing"
)

func TestCRC16(t *testing.T) {
	if got := crc16("123456789"); got != 0x31C3 {
		t.Fatalf("crc16(123456789) = %#x, want 0x31C3", got)
	}
	if got := crc16(""); got != 0 {
		t.Fatalf("crc16('') = %#x", got)
	}
}

func TestSlot(t *testing.T) {
	// Values from CLUSTER KEYSLOT (TestSlotMatchesRedis checks many more).
	for key, want := range map[string]uint16{
		"foo": 12182, "somekey": 11058, "foo{hash_tag}": 2515, "{hash_tag}": 2515, "123456789": 0x31C3 % Slots,
	} {
		if got := Slot(key); got != want {
			t.Errorf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
	// Keys on the left hash as the string on the right.
	for key, as := range map[string]string{
		"{user1000}.following": "user1000",
		"{user1000}.followers": "user1000",
		"foo{}{bar}":           "foo{}{bar}", // the first '{' has an empty tag: the whole key
		"foo{{bar}}zap":        "{bar",       // the tag runs to the first '}' after the first '{'
		"foo{bar}{zap}":        "bar",
		"{":                    "{",
		"}{":                   "}{",
		"{}":                   "{}",
		"a{b":                  "a{b",
		"a}b{c}":               "c",
		"{a}":                  "a",
		"":                     "",
		"rl:{r|alice}:log":     "r|alice",
	} {
		if Slot(key) != Slot(as) || Slot(key) != crc16(as)%Slots {
			t.Errorf("Slot(%q) = %d, want Slot(%q) = %d", key, Slot(key), as, crc16(as)%Slots)
		}
	}
}

func TestMap(t *testing.T) {
	var m Map
	m.Reset()
	if m.Owner(0) != Unknown || m.Owner(Slots-1) != Unknown || m.Owner(Slots) != Unknown || m.Owner(65535) != Unknown {
		t.Fatal("Reset: not every slot Unknown")
	}
	m.Set(7, 3)
	m.Set(Slots, 3) // ignored, no panic
	if m.Owner(7) != 3 || m.Owner(8) != Unknown {
		t.Fatalf("Set: %d %d", m.Owner(7), m.Owner(8))
	}
}

func TestParseError(t *testing.T) {
	type want struct {
		kind Kind
		slot uint16
		addr string
	}
	for msg, w := range map[string]want{
		"MOVED 3999 127.0.0.1:6381":                               {Moved, 3999, "127.0.0.1:6381"},
		"-MOVED 12182 node-b.test:17002":                          {Moved, 12182, "node-b.test:17002"},
		"-MOVED 16383 ::1:6381\r\n":                               {Moved, 16383, "::1:6381"},
		"ASK 3999 host:6380":                                      {Ask, 3999, "host:6380"},
		"-ASK 0 :6380":                                            {Ask, 0, ":6380"},
		"TRYAGAIN Multiple keys request during rehashing of slot": {TryAgain, 0, ""},
		"-TRYAGAIN":                                               {TryAgain, 0, ""},
		"CLUSTERDOWN The cluster is down":                         {ClusterDown, 0, ""},
		"-CLUSTERDOWN Hash slot not served":                       {ClusterDown, 0, ""},
		"MOVED 16384 host:1":                                      {},
		"MOVED 99999 host:1":                                      {},
		"MOVED -1 host:1":                                         {},
		"MOVED 3999":                                              {},
		"MOVED 3999 ":                                             {},
		"MOVED  3999 host:1":                                      {},
		"MOVED 3999 host:1 more":                                  {},
		"MOVED x host:1":                                          {},
		"MOVED":                                                   {},
		"MOVEDX 1 h:1":                                            {},
		"moved 1 h:1":                                             {},
		"TRYAGAINX":                                               {},
		"ERR unknown command":                                     {},
		"NOPERM this user has no permissions":                     {},
		"":                                                        {},
		"-":                                                       {},
		"MOVED 1 " + strings.Repeat("h", 300):                     {},
	} {
		k, s, a := ParseError(msg)
		if (want{k, s, a}) != w {
			t.Errorf("ParseError(%q) = %v %d %q, want %v %d %q", msg, k, s, a, w.kind, w.slot, w.addr)
		}
	}
}
