package keyspace

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

func TestKeyPartEncoding(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"user-42", "user-42"},
		{"a b", "a%20b"},
		{"{tag}", "%7Btag%7D"},
		{"a|b:c", "a%7Cb%3Ac"},
		{"100%", "100%25"},
		{"#hash", "%23hash"},
		{"\r\n", "%0D%0A"},
		{"\xff\xfe", "%FF%FE"},
		{"", ""},
	} {
		if got := string(AppendPart(nil, tc.in)); got != tc.want {
			t.Errorf("AppendPart(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	long := strings.Repeat("x", 65)
	got := string(AppendPart(nil, long))
	if len(got) != 23 || got[0] != '#' {
		t.Fatalf("long value: %q", got)
	}
	if got == string(AppendPart(nil, long+"y")) {
		t.Fatal("distinct long values share a hash")
	}
}

// Hostile values: bounded, no braces or separators, distinct.
func TestKeyPartHostileInput(t *testing.T) {
	inputs := []string{
		"{", "}", "{}", "}{", ":", "|", "%", "#", "\r\n", "\x00", "%7B", "#AAAA",
		strings.Repeat("{", 100), strings.Repeat("a", 64<<10), strings.Repeat("a", 64<<10) + "b",
		"\xc3\x28", "é", "%C3%A9", strings.Repeat("%", 21), strings.Repeat("%", 22),
	}
	seen := map[string]string{}
	for _, in := range inputs {
		out := string(AppendPart(nil, in))
		if len(out) > MaxPartLen {
			t.Errorf("%.20q: %d bytes", in, len(out))
		}
		if strings.ContainsAny(out, "{}|:\r\n\x00") || !utf8.ValidString(out) {
			t.Errorf("%.20q encodes to unsafe %q", in, out)
		}
		if prev, dup := seen[out]; dup {
			t.Errorf("%.20q and %.20q both encode to %q", prev, in, out)
		}
		seen[out] = in
	}
}

func TestCanonicalClientIP(t *testing.T) {
	v4 := config.KeyPart{Source: config.SourceClientIP, IPv4Prefix: config.PrefixLen{Bits: 24, Set: true}}
	for _, tc := range []struct {
		part      config.KeyPart
		in, want  string
		wantError string
	}{
		{v4, "203.0.113.0/24", "203.0.113.0/24", ""},
		{v4, "203.0.113.9/24", "203.0.113.0/24", ""},
		{v4, "203.0.113.9/28", "203.0.113.0/24", ""},
		{v4, "::ffff:203.0.113.9/120", "203.0.113.0/24", ""},
		{v4, "203.0.0.0/16", "", `"203.0.0.0/16" is a network wider than the rule's /24`},
		{v4, "fe80::1%eth0", "fe80::1", ""},
		{config.KeyPart{Source: config.SourceClientIP}, "203.0.113.9/32", "203.0.113.9", ""},
		{config.KeyPart{Source: config.SourceClientIP}, "203.0.113.0/24", "", `"203.0.113.0/24" is a network wider than the rule's /32`},
		{v4, "alice", "", `"alice" is not an IP address or network`},
		{v4, "", "", `"" is not an IP address or network`},
		{config.KeyPart{Source: config.SourceHeader, Name: "x-user"}, "alice", "alice", ""},
		{config.KeyPart{Source: config.SourceJWTClaim, Name: "sub"}, "203.0.113.9", "203.0.113.9", ""},
	} {
		got, err := Canonical(&tc.part, tc.in)
		if got != tc.want || errString(err) != tc.wantError {
			t.Errorf("canonical(%q) under %+v: %q, %v; want %q, %q", tc.in, tc.part, got, err, tc.want, tc.wantError)
		}
	}
	// RuleKey, as ratelimitctl calls it, names the part that failed.
	c := &config.Config{Redis: config.RedisConfig{Prefix: "rl:"}}
	rule := &config.Rule{Name: "per-net", Key: []config.KeyPart{v4}}
	if k, err := RuleKey(c, rule, []string{"203.0.113.7"}); err != nil || k != "rl:{per-net|203.0.113.0/24}" {
		t.Errorf("RuleKey: %q, %v", k, err)
	}
	if _, err := RuleKey(c, rule, []string{"nope"}); errString(err) != `rule per-net: key part 0 (client_ip): "nope" is not an IP address or network` {
		t.Errorf("RuleKey error: %v", err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
