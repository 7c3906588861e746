package usage

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
)

func usageGzip(t testing.TB, body string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// usageScanEncoded runs a response with this content-encoding through u.
func usageScanEncoded(u *Scanner, f *Fields, sse bool, maxBytes int, ce string, chunks ...[]byte) (int64, bool) {
	u.Start(f, sse, maxBytes)
	u.SetEncoding(ce)
	for _, c := range chunks {
		u.Write(c)
	}
	return u.Finish()
}

// A gzip body gives the same usage as the plain one, JSON or stream, in
// any chunking; each coding the scanner does not read gives none.
func TestUsageGzip(t *testing.T) {
	for _, tc := range []struct {
		preset string
		sse    bool
		body   string
		want   int64
	}{
		{"openai_chat", false, usageChatJSON, 29},
		{"openai_chat", true, usageChatSSE, 21},
		{"openai_responses", false, usageResponsesJSON, 380},
		{"openai_responses", true, usageResponsesSSE, 48},
		{"anthropic", false, usageAnthropicJSON, 2598},
		{"anthropic", true, usageAnthropicSSE, 40},
	} {
		f := usagePreset(tc.preset)
		z := usageGzip(t, tc.body)
		var u Scanner // reused
		for _, ce := range []string{"gzip", "GZIP", " x-gzip "} {
			for _, n := range []int{1, 7, len(z)} {
				if got, found := usageScanEncoded(&u, f, tc.sse, 1<<20, ce, usageChunks(z, n)...); got != tc.want || !found {
					t.Errorf("%s (sse %v, %q, chunks of %d): got %d, %v; want %d", tc.preset, tc.sse, ce, n, got, found, tc.want)
				}
			}
		}
		if _, model := u.Tokens(); model == "" {
			t.Errorf("%s (sse %v): no model read through gzip", tc.preset, tc.sse)
		}
		for _, ce := range []string{"br", "deflate", "zstd", "gzip, br"} {
			if got, found := usageScanEncoded(&u, f, tc.sse, 1<<20, ce, z); found {
				t.Errorf("%s: content-encoding %q read as %d", tc.preset, ce, got)
			}
		}
		if got, found := usageScanEncoded(&u, f, tc.sse, 1<<20, "identity", []byte(tc.body)); got != tc.want || !found {
			t.Errorf("%s: identity: got %d, %v", tc.preset, got, found)
		}
	}
}

// A broken gzip body has no usage: truncated anywhere, a flipped byte in
// its data or its CRC-32, or not gzip at all. Nothing of it is counted,
// even the events before the break.
func TestUsageGzipBroken(t *testing.T) {
	for _, tc := range []struct {
		preset string
		sse    bool
		body   string
	}{{"openai_chat", false, usageChatJSON}, {"anthropic", true, usageAnthropicSSE}} {
		f := usagePreset(tc.preset)
		z := usageGzip(t, tc.body)
		var u Scanner
		for cut := 0; cut < len(z); cut++ {
			if got, found := usageScanEncoded(&u, f, tc.sse, 1<<20, "gzip", z[:cut]); found {
				t.Fatalf("%s truncated to %d of %d bytes: got %d", tc.preset, cut, len(z), got)
			}
		}
		for _, at := range []int{len(z) - 8, len(z) - 5, len(z) / 2} { // the CRC-32, the length, the data
			bad := bytes.Clone(z)
			bad[at] ^= 0x40
			if got, found := usageScanEncoded(&u, f, tc.sse, 1<<20, "gzip", bad); found {
				t.Errorf("%s with byte %d flipped: got %d", tc.preset, at, got)
			}
		}
		if _, found := usageScanEncoded(&u, f, tc.sse, 1<<20, "gzip", []byte(tc.body)); found {
			t.Errorf("%s: a plain body labelled gzip was read", tc.preset)
		}
	}
}

// A gzip bomb stops at the bound: 1 GiB of zeros (1 MiB compressed, in
// 1024 gzip members) inflates no further than max_body_bytes decoded, and its usage is
// missing; so does a body whose compressed size passes the bound.
func TestUsageGzipBomb(t *testing.T) {
	zeros := usageGzip(t, string(make([]byte, 1<<20))) // one member: 1 MiB of zeros
	bomb := usageGzip(t, `{"usage":{"prompt_tokens":1,"completion_tokens":1},"pad":"`)
	for range 1024 {
		bomb = append(bomb, zeros...) // gzip members follow one another
	}
	bomb = append(bomb, usageGzip(t, `"}`)...)
	f := usagePreset("openai_chat")
	var u Scanner
	for _, sse := range []bool{false, true} {
		if _, found := usageScanEncoded(&u, f, sse, 4<<20, "gzip", bomb); found {
			t.Fatalf("sse %v: the bomb was read", sse)
		}
		if len(u.buf) > 4<<20 || u.z.src.Len() < len(bomb)/2 {
			t.Fatalf("sse %v: held %d bytes, and left %d of %d compressed bytes unread: the inflater went beyond the bound", sse, len(u.buf), u.z.src.Len(), len(bomb))
		}
	}
	// The inflater's work is bounded by what it may output: a bound of
	// 64 KiB stops it after at most 64 KiB + one buffer of output.
	small := usageGzip(t, strings.Repeat(" ", 1<<20)+usageChatJSON)
	if _, found := usageScanEncoded(&u, f, false, 64<<10, "gzip", small); found {
		t.Fatal("1 MiB decoded read under a 64 KiB bound")
	}
	if _, found := usageScanEncoded(&u, f, false, 100, "gzip", usageGzip(t, usageChatJSON)); found {
		t.Fatal("a compressed body over the bound was read")
	}
	if got, found := usageScanEncoded(&u, f, false, len(usageChatJSON), "gzip", usageGzip(t, usageChatJSON)); got != 29 || !found {
		t.Fatalf("a body exactly at the bound: got %d, %v", got, found)
	}
}

// Steady state through gzip: the reader and its buffers are recycled. A
// small JSON body allocates nothing; a 1 MiB stream a few times, for the
// Huffman tables of the standard library's inflater, not per chunk.
func TestUsageGzipAllocs(t *testing.T) {
	f := usagePreset("openai_chat")
	for _, tc := range []struct {
		sse  bool
		body []byte
		max  float64
	}{{false, []byte(usageChatJSON), 0}, {true, usageChatStream(1 << 20), 16}} {
		z := usageGzip(t, string(tc.body))
		chunks := usageChunks(z, 512)
		var u Scanner
		usageScanEncoded(&u, f, tc.sse, 4<<20, "gzip", chunks...)
		allocs := testing.AllocsPerRun(10, func() {
			if _, found := usageScanEncoded(&u, f, tc.sse, 4<<20, "gzip", chunks...); !found {
				t.Fatal("usage not found")
			}
		})
		if allocs > tc.max {
			t.Errorf("sse %v: %v allocations per response of %d chunks, want at most %v", tc.sse, allocs, len(chunks), tc.max)
		}
	}
}

// FuzzUsageGzip: whatever the bytes, compressed or raw, the scanner ends
// and reads through gzip what it reads plain.
func FuzzUsageGzip(f *testing.F) {
	for _, s := range []string{usageChatJSON, usageAnthropicSSE, `{"n":5}`, "data: {\"n\":2}\n\n"} {
		f.Add([]byte(s), uint8(0), true, uint64(1))
		f.Add(usageGzip(f, s), uint8(3), false, uint64(2))
	}
	f.Fuzz(func(t *testing.T, in []byte, which uint8, compress bool, seed uint64) {
		if len(in) > 16<<10 {
			return // within the bound, compressed or not
		}
		fields := usageFuzzFields[int(which)%len(usageFuzzFields)]
		sse := which&0x80 != 0
		var u Scanner
		if !compress { // raw bytes labelled gzip: read or not, never stuck
			usageScanEncoded(&u, fields, sse, 1<<16, "gzip", usageRandomChunks(in, seed)...)
			return
		}
		want, wantFound := usageScan(&u, fields, sse, 1<<16, in)
		got, found := usageScanEncoded(&u, fields, sse, 1<<16, "gzip", usageRandomChunks(usageGzip(t, string(in)), seed)...)
		if got != want || found != wantFound {
			t.Fatalf("through gzip %d, %v; plain %d, %v", got, found, want, wantFound)
		}
	})
}

// The inflater is made when a response is first inflated, once per VM:
// plain bodies never make it, and every stream after shares it.
func TestUsageInflaterMadeOnFirstUse(t *testing.T) {
	inflater.zr, inflater.out = nil, nil
	f := usagePreset("openai_chat")
	var a, b Scanner
	for _, ce := range []string{"", "identity", "br"} {
		usageScanEncoded(&a, f, false, 4<<20, ce, []byte(usageChatJSON))
		usageScanEncoded(&a, f, true, 4<<20, ce, usageChatStream(1<<10))
	}
	if inflater.zr != nil || inflater.out != nil {
		t.Fatal("a response read plain made the inflater")
	}
	z := usageGzip(t, usageChatJSON)
	if got, found := usageScanEncoded(&a, f, false, 4<<20, "gzip", z); got != 29 || !found {
		t.Fatalf("gzip: %d, %v", got, found)
	}
	zr := inflater.zr
	if zr == nil || len(inflater.out) != gzipOut {
		t.Fatal("no inflater after a gzip body")
	}
	allocs := testing.AllocsPerRun(10, func() {
		if _, found := usageScanEncoded(&b, f, false, 4<<20, "gzip", z); !found {
			t.Fatal("usage not found")
		}
	})
	if inflater.zr != zr || allocs != 0 {
		t.Errorf("a second stream: its own inflater (%v) or %v allocations", inflater.zr != zr, allocs)
	}
}
