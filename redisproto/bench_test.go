package redisproto

import (
	"strings"
	"testing"
)

// evalReply is what the rate-limit script returns: 3 header integers, then
// 3 integers for each of 5 rules.
var evalReply = "*18\r\n:1\r\n:0\r\n:1700000000\r\n" +
	strings.Repeat(":1\r\n:99\r\n:1000\r\n", 5)

// nestedReply carries the same data as nested arrays, one per rule.
var nestedReply = "*4\r\n:1\r\n:0\r\n:1700000000\r\n*5\r\n" +
	strings.Repeat("*3\r\n:1\r\n:99\r\n:1000\r\n", 5)

// evalshaArgs is an EVALSHA call with 3 keys and 12 arguments.
var evalshaArgs = []string{
	"EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "3",
	"rl:{tenant-42}:minute", "rl:{tenant-42}:hour", "rl:{tenant-42}:day",
	"1700000000123", "1", "60", "100", "3600", "1000", "86400", "10000", "1", "0", "30", "2",
}

func BenchmarkAppendCommand(b *testing.B) {
	b.ReportAllocs()
	buf := AppendCommand(nil, evalshaArgs...)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		buf = AppendCommand(buf[:0], evalshaArgs...)
	}
}

func BenchmarkDecode(b *testing.B) {
	benchmarkDecode(b, evalReply)
}

func BenchmarkDecodeNested(b *testing.B) {
	benchmarkDecode(b, nestedReply)
}

func benchmarkDecode(b *testing.B, reply string) {
	b.Helper()
	b.ReportAllocs()
	in := []byte(reply)
	b.SetBytes(int64(len(in)))
	var d Decoder
	for b.Loop() {
		if _, _, err := d.Decode(in); err != nil {
			b.Fatal(err)
		}
	}
}
