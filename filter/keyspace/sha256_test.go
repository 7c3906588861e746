package keyspace

import (
	"crypto/sha256"
	"strings"
	"testing"
)

// sum256 is crypto/sha256's sum for every length around the block and
// padding boundaries, and for the FIPS 180-4 examples.
func TestSum256(t *testing.T) {
	for n := 0; n <= 200; n++ {
		s := strings.Repeat("abcdefghij", 21)[:n]
		if sum256(s) != sha256.Sum256([]byte(s)) {
			t.Errorf("length %d: %x, want %x", n, sum256(s), sha256.Sum256([]byte(s)))
		}
	}
	if got := sum256("abc"); got != [32]byte{0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
		0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad} {
		t.Errorf("abc: %x", got)
	}
}

func FuzzSum256(f *testing.F) {
	f.Add("")
	f.Add("abc")
	f.Add(strings.Repeat("a", 55))
	f.Add(strings.Repeat("a", 64))
	f.Add(strings.Repeat("\xff", 119))
	f.Fuzz(func(t *testing.T, s string) {
		if sum256(s) != sha256.Sum256([]byte(s)) {
			t.Fatalf("%q: %x, want %x", s, sum256(s), sha256.Sum256([]byte(s)))
		}
	})
}

func BenchmarkSum256(b *testing.B) {
	s := strings.Repeat("x", 300)
	b.ReportAllocs()
	b.Run("own", func(b *testing.B) {
		for b.Loop() {
			sum256(s)
		}
	})
	b.Run("crypto", func(b *testing.B) {
		for b.Loop() {
			sha256.Sum256([]byte(s))
		}
	})
}
