package wasmhost

import (
	"fmt"
	"strings"
)

// This file does to :path what Envoy's connection manager does before any
// filter runs, per normalize_path, merge_slashes and
// path_with_escaped_slashes_action (conn_manager_utility.cc,
// maybeNormalizePath; path_utility.cc). The canonical form is a model of
// the Chromium URL canonicalizer Envoy uses: dot segments removed, "\" read
// as "/", escapes of unreserved characters decoded, other escapes kept as
// written, and the characters it escapes (controls, space, "<>`{}, DEL
// and non-ASCII) escaped.

// EscapedSlashesAction is path_with_escaped_slashes_action: what a path
// holding %2F, %2f, %5C or %5c gets.
type EscapedSlashesAction int

const (
	// KeepUnchanged leaves the escapes (Envoy's default).
	KeepUnchanged EscapedSlashesAction = iota
	// RejectRequest answers 400.
	RejectRequest
	// UnescapeAndRedirect answers 307 with the unescaped, normalized path
	// in Location.
	UnescapeAndRedirect
	// UnescapeAndForward unescapes them and goes on.
	UnescapeAndForward
)

var escapedSlashesNames = [...]string{"KEEP_UNCHANGED", "REJECT_REQUEST", "UNESCAPE_AND_REDIRECT", "UNESCAPE_AND_FORWARD"}

// String returns Envoy's name for a, e.g. "UNESCAPE_AND_REDIRECT".
func (a EscapedSlashesAction) String() string {
	if a < 0 || int(a) >= len(escapedSlashesNames) {
		return fmt.Sprintf("EscapedSlashesAction(%d)", int(a))
	}
	return escapedSlashesNames[a]
}

// ParseEscapedSlashesAction reads Envoy's name of an action;
// IMPLEMENTATION_SPECIFIC_DEFAULT is KeepUnchanged, as in Envoy.
func ParseEscapedSlashesAction(s string) (EscapedSlashesAction, error) {
	if s == "IMPLEMENTATION_SPECIFIC_DEFAULT" {
		return KeepUnchanged, nil
	}
	for i, n := range escapedSlashesNames {
		if s == n {
			return EscapedSlashesAction(i), nil
		}
	}
	return 0, fmt.Errorf("unknown path_with_escaped_slashes_action %q: want one of %s", s, strings.Join(escapedSlashesNames[:], ", "))
}

// pathAction is what the connection manager does with a request's path.
type pathAction int

const (
	pathContinue pathAction = iota
	pathReject              // 400, path_normalization_failed
	pathRedirect            // 307 to the new path
)

// normalizePath returns the path the filters see, and whether the request
// goes on, is rejected or redirected. With none of the settings on, the
// path is left as it came.
func (c *Config) normalizePath(path string) (string, pathAction) {
	if !c.NormalizePath && !c.MergeSlashes && c.EscapedSlashes == KeepUnchanged {
		return path, pathContinue
	}
	if strings.Contains(path, "#") { // http_reject_path_with_fragment
		return path, pathReject
	}
	action := pathContinue
	if c.EscapedSlashes != KeepUnchanged {
		if p, found := unescapeSlashes(path); found {
			switch c.EscapedSlashes {
			case RejectRequest:
				return path, pathReject
			case UnescapeAndRedirect:
				action = pathRedirect
			}
			path = p
		}
	}
	if c.NormalizePath {
		p, ok := canonicalPath(path)
		if !ok {
			return path, pathReject
		}
		path = p
	}
	if c.MergeSlashes {
		path = mergeSlashes(path)
	}
	return path, action
}

// splitQuery cuts path before its "?".
func splitQuery(path string) (string, string) {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		return path[:i], path[i:]
	}
	return path, ""
}

// unescapeSlashes decodes %2F, %2f, %5C and %5c before the query, and
// reports whether there were any.
func unescapeSlashes(path string) (string, bool) {
	p, q := splitQuery(path)
	if !strings.Contains(p, "%") {
		return path, false
	}
	r := strings.NewReplacer("%2F", "/", "%2f", "/", "%5C", `\`, "%5c", `\`)
	out := r.Replace(p)
	return out + q, len(out) != len(p)
}

// mergeSlashes is Envoy's PathUtil::mergeSlashes: the segments before the
// query, joined by one "/", keeping a leading and a trailing one.
func mergeSlashes(path string) string {
	p, q := splitQuery(path)
	if !strings.Contains(p, "//") {
		return path
	}
	var segs []string
	for _, s := range strings.Split(p, "/") {
		if s != "" {
			segs = append(segs, s)
		}
	}
	var b strings.Builder
	if strings.HasPrefix(p, "/") {
		b.WriteByte('/')
	}
	b.WriteString(strings.Join(segs, "/"))
	if strings.HasSuffix(p, "/") {
		b.WriteByte('/')
	}
	return b.String() + q
}

// canonicalPath canonicalizes the part before the query; a path that does
// not start with "/" fails, as Envoy rejects it.
func canonicalPath(path string) (string, bool) {
	p, q := splitQuery(path)
	if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, `\`) {
		return path, false
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\':
			b.WriteByte('/')
		case c == '%' && i+2 < len(p) && isHex(p[i+1]) && isHex(p[i+2]):
			d := unhex(p[i+1])<<4 | unhex(p[i+2])
			if isUnreserved(d) {
				b.WriteByte(d)
			} else {
				b.WriteString(p[i : i+3])
			}
			i += 2
		case c <= ' ' || c >= 0x7f || strings.IndexByte("\"<>`{}", c) >= 0:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		default:
			b.WriteByte(c)
		}
	}
	return removeDotSegments(b.String()) + q, true
}

// removeDotSegments drops "." and ".." segments (RFC 3986 5.2.4), never
// above the root; a path ending in one keeps its trailing "/".
func removeDotSegments(p string) string {
	segs := strings.Split(p[1:], "/")
	out := make([]string, 0, len(segs))
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0
}
