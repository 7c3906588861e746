package keyspace

import (
	"strings"
	"testing"
)

// Key parts are bounded, never hold separators, and stay distinct.
func FuzzKeyPart(f *testing.F) {
	f.Add("user-42", "user-43")
	f.Add("{a}", "%7Ba%7D")
	f.Add(strings.Repeat("x", 70), strings.Repeat("x", 71))
	f.Add("a|b", "a%7Cb")
	f.Fuzz(func(t *testing.T, a, b string) {
		ka, kb := string(AppendPart(nil, a)), string(AppendPart(nil, b))
		for _, k := range []string{ka, kb} {
			if len(k) > MaxPartLen || strings.ContainsAny(k, "{}|:\r\n") {
				t.Fatalf("unsafe part %q", k)
			}
		}
		if a != b && ka == kb {
			t.Fatalf("%q and %q share the part %q", a, b, ka)
		}
	})
}
