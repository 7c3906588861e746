package wasmhost

import "testing"

// The connection manager's path steps, in Envoy's order: escaped slashes,
// then normalize_path, then merge_slashes; the query is left alone.
func TestNormalizePathSteps(t *testing.T) {
	all := Config{NormalizePath: true, MergeSlashes: true, EscapedSlashes: UnescapeAndRedirect}
	for _, tc := range []struct {
		cfg    Config
		in     string
		want   string
		action pathAction
	}{
		{all, "/a/b", "/a/b", pathContinue},
		{all, "/a/./b/../c/", "/a/c/", pathContinue},
		{all, `/a\b`, "/a/b", pathContinue},
		{all, "/%41%7e%2e%2E/x", "/A~../x", pathContinue},
		{all, "/a/%2e%2E/x", "/x", pathContinue}, // %2e%2E is ".." once decoded
		{all, "/a%7Cb%3f", "/a%7Cb%3f", pathContinue},
		{all, "/a b\"<>", "/a%20b%22%3C%3E", pathContinue},
		{all, "/a%zz", "/a%zz", pathContinue},
		{all, "/../..", "/", pathContinue},
		{all, "///a//b///?x=//", "/a/b/?x=//", pathContinue},
		{all, "/a%2fb?x=%2F", "/a/b?x=%2F", pathRedirect},
		{all, "/a%5Cb", "/a/b", pathRedirect},
		{all, "/a#frag", "/a#frag", pathReject},
		{all, "a/b", "a/b", pathReject},
		{Config{EscapedSlashes: RejectRequest}, "/a%2Fb", "/a%2Fb", pathReject},
		{Config{EscapedSlashes: UnescapeAndForward}, "/a%2F%2Fb", "/a//b", pathContinue},
		{Config{MergeSlashes: true}, "//a/./b", "/a/./b", pathContinue},
		{Config{NormalizePath: true}, "//a/./b", "//a/b", pathContinue},
		{Config{}, "//a/%2F/../b#x", "//a/%2F/../b#x", pathContinue},
	} {
		got, action := tc.cfg.normalizePath(tc.in)
		if got != tc.want || action != tc.action {
			t.Errorf("normalizePath(%q) = %q, %d; want %q, %d", tc.in, got, action, tc.want, tc.action)
		}
	}
}

func TestParseEscapedSlashesAction(t *testing.T) {
	for _, a := range []EscapedSlashesAction{KeepUnchanged, RejectRequest, UnescapeAndRedirect, UnescapeAndForward} {
		if got, err := ParseEscapedSlashesAction(a.String()); err != nil || got != a {
			t.Errorf("round trip of %v: %v, %v", a, got, err)
		}
	}
	if got, err := ParseEscapedSlashesAction("IMPLEMENTATION_SPECIFIC_DEFAULT"); err != nil || got != KeepUnchanged {
		t.Errorf("IMPLEMENTATION_SPECIFIC_DEFAULT: %v, %v", got, err)
	}
	if _, err := ParseEscapedSlashesAction("unescape"); err == nil {
		t.Error("an unknown name was accepted")
	}
}
