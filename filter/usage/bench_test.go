package usage

import (
	"fmt"
	"strings"
	"testing"
)

// usageChatStream is an OpenAI chat stream of about size bytes: small
// content deltas, then the usage chunk and [DONE].
func usageChatStream(size int) []byte {
	var b []byte
	for i := 0; len(b) < size; i++ {
		b = fmt.Appendf(b, usageChatChunk, []string{" the", " quick", " brown", " fox\\n", " jumps"}[i%5])
	}
	return append(b, usageChatUsage+"data: [DONE]\n\n"...)
}

// usageAnthropicStream is an Anthropic stream of about size bytes.
func usageAnthropicStream(size int) []byte {
	head, tail, _ := strings.Cut(usageAnthropicSSE, "event: content_block_delta\n")
	_, tail, _ = strings.Cut(tail, "event: content_block_stop\n")
	b := []byte(head)
	for len(b) < size {
		b = append(b, "event: content_block_delta\n"+`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" jumps"}}`+"\n\n"...)
	}
	return append(b, "event: content_block_stop\n"+tail...)
}

// usageChunks cuts b in chunks of n bytes, as the proxy hands them over.
func usageChunks(b []byte, n int) [][]byte {
	var out [][]byte
	for i := 0; i < len(b); i += n {
		out = append(out, b[i:min(i+n, len(b))])
	}
	return out
}

func benchUsage(b *testing.B, f *Fields, sse bool, body []byte) {
	chunks := usageChunks(body, 4096)
	var u Scanner
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, found := usageScan(&u, f, sse, 1<<20, chunks...); !found {
			b.Fatal("usage not found")
		}
	}
}

// 1 MB streams of small deltas in 4 KiB chunks, ending in usage.
func BenchmarkUsageSSE(b *testing.B) {
	b.Run("openai_chat", func(b *testing.B) {
		benchUsage(b, usagePreset("openai_chat"), true, usageChatStream(1<<20))
	})
	b.Run("anthropic", func(b *testing.B) {
		benchUsage(b, usagePreset("anthropic"), true, usageAnthropicStream(1<<20))
	})
	b.Run("crlf", func(b *testing.B) {
		body := strings.ReplaceAll(string(usageChatStream(1<<20)), "\n", "\r\n")
		benchUsage(b, usagePreset("openai_chat"), true, []byte(body))
	})
}

// A 64 KiB chat completion body in 4 KiB chunks.
func BenchmarkUsageJSON(b *testing.B) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 64<<10/45)
	body := strings.Replace(usageChatJSON, "Hello! How can I assist you today?", text, 1)
	benchUsage(b, usagePreset("openai_chat"), false, []byte(body))
}
