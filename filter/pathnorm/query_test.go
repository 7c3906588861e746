package pathnorm

import (
	"net/url"
	"testing"
)

func TestQueryUnescape(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"acme+co", "acme co", true}, {"a%20b", "a b", true}, {"%41%7a", "Az", true}, {"plain", "plain", true},
		{"", "", true}, {"%", "", false}, {"%4", "", false}, {"%zz", "", false}, {"a%4g", "", false},
		{"%2B", "+", true}, {"%%41", "", false}, {"%00", "\x00", true},
	} {
		if got, ok := QueryUnescape(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("QueryUnescape(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// queryUnescape decodes as url.QueryUnescape does, which the filter used
// before it left net/url out.
func FuzzQueryUnescape(f *testing.F) {
	for _, s := range []string{"a+b", "%41", "%", "%4", "%zz", "a%2", "%e2%82%ac", "x=1&y=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := QueryUnescape(s)
		want, err := url.QueryUnescape(s)
		if ok != (err == nil) || got != want {
			t.Fatalf("QueryUnescape(%q) = %q, %v; url: %q, %v", s, got, ok, want, err)
		}
	})
}
