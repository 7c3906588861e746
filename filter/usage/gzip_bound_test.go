package usage

import "testing"

// The compressed-size bound decides on its own: a body whose gzip passes
// the bound, padded with empty gzip members, is refused although it
// inflates to exactly the bound, which the decoded bound admits. Kills a
// compressed bound that never decides (writeEncoded's len(z.in)+len(chunk)
// > u.bound() case lost or loosened): TestUsageGzipBomb's bodies also
// inflate past the decoded bound, which then refuses them anyway.
func TestUsageGzipCompressedBoundDecides(t *testing.T) {
	f := usagePreset("openai_chat")
	bound := len(usageChatJSON) // decoded, the body is exactly the bound
	var u Scanner
	// Unpadded, the same body is read: the decoded bound admits it.
	if got, found := usageScanEncoded(&u, f, false, bound, "gzip", usageGzip(t, usageChatJSON)); got != 29 || !found {
		t.Fatalf("the unpadded body at the bound: got %d, %v", got, found)
	}
	body := usageGzip(t, usageChatJSON)
	for empty := usageGzip(t, ""); len(body) <= bound; {
		body = append(body, empty...)
	}
	// Padded, in one chunk and in chunks of 64 bytes.
	for _, size := range []int{len(body), 64} {
		var chunks [][]byte
		for rest := body; len(rest) > 0; rest = rest[min(size, len(rest)):] {
			chunks = append(chunks, rest[:min(size, len(rest))])
		}
		if got, found := usageScanEncoded(&u, f, false, bound, "gzip", chunks...); found {
			t.Errorf("chunks of %d: %d compressed bytes over a bound of %d were read: %d", size, len(body), bound, got)
		}
	}
}
