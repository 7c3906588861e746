// Package pathnorm normalizes a request's path, so that the spellings of
// one path are one path: the filter matches rules and builds keys on it,
// the configuration's match paths must be in its form, and ratelimitctl
// builds a path part's key with it.
package pathnorm

import "strings"

// Normalize is :path as a rule matches it (match.path, match.path_prefix)
// and a path key part reads it, so that spellings of one path are one
// path: otherwise "/a%7Cb", "//a|b", "/x/../a|b" and "/a|b;x" would each
// be a fresh key, and a client could mint keys at will. In one pass over
// the path, it does:
//
//   - drop the query and the fragment;
//   - percent-decode every octet except those that would change the path's
//     structure once decoded ("/", "\", "%", "?", "#", ";") or are control
//     characters or space: those stay encoded, hex in upper case, and a
//     "%" that starts no valid escape becomes "%25". Envoy's normalize_path
//     decodes only the unreserved characters (A-Z a-z 0-9 - . _ ~), so
//     after it the filter still equates "%7C" with "|";
//   - read "\" as "/", as Envoy's normalize_path does;
//   - drop each segment's ";params" (from a raw ";" to the segment's end),
//     as Java servlet containers do and Envoy does not: "/a;x/b" is "/a/b"
//     here, so "..;" is a dot segment too;
//   - merge repeated slashes (Envoy's merge_slashes);
//   - resolve "." and ".." segments (RFC 3986 section 5.2.4,
//     remove_dot_segments), never above the root.
//
// A trailing slash and letter case stay: "/a/" and "/A" are not "/a", for
// Envoy and most servers alike. A path that does not start with "/" (such
// as "*") is only cut at its query. The work is linear in the path's
// length, and a path already normal is returned as it is, allocating
// nothing.
func Normalize(p string) string {
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	if len(p) == 0 || p[0] != '/' || pathIsNormal(p) {
		return p
	}
	return string(appendNormalPath(make([]byte, 0, len(p)), p))
}

// pathIsNormal reports whether Normalize would return p unchanged: no
// escape, backslash or ";", no empty, "." or ".." segment. p starts with
// "/" and has no query.
func pathIsNormal(p string) bool {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '%', '\\', ';':
			return false
		case '/':
			seg := p[i+1:]
			if j := strings.IndexByte(seg, '/'); j >= 0 {
				seg = seg[:j]
			}
			if seg == "." || seg == ".." || seg == "" && i+1 < len(p) {
				return false
			}
		}
	}
	return true
}

// appendNormalPath appends p normalized to dst; p starts with "/".
// Invariant: dst[base:] is "" or "/seg/seg..." with no trailing slash.
func appendNormalPath(dst []byte, p string) []byte {
	base := len(dst)
	trailing := false // the path ends in a directory: "/", "/." or "/.."
	for len(p) > 0 {
		p = p[1:] // the separator
		end := strings.IndexAny(p, `/\`)
		if end < 0 {
			end = len(p)
		}
		raw := p[:end]
		p = p[end:]
		if i := strings.IndexByte(raw, ';'); i >= 0 {
			raw = raw[:i]
		}
		mark := len(dst)
		dst = append(dst, '/')
		dst = appendDecoded(dst, raw)
		switch seg := dst[mark+1:]; {
		case len(seg) == 0, len(seg) == 1 && seg[0] == '.':
			dst, trailing = dst[:mark], true
		case len(seg) == 2 && seg[0] == '.' && seg[1] == '.':
			dst = dst[:mark]
			for len(dst) > base && dst[len(dst)-1] != '/' {
				dst = dst[:len(dst)-1]
			}
			if len(dst) > base {
				dst = dst[:len(dst)-1] // its slash
			}
			trailing = true
		default:
			trailing = false
		}
	}
	if trailing || len(dst) == base {
		dst = append(dst, '/')
	}
	return dst
}

// appendDecoded appends segment s with its escapes decoded, but for those
// Normalize keeps (see there).
func appendDecoded(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			dst = append(dst, c)
			continue
		}
		hi, lo := unhex(s, i+1), unhex(s, i+2)
		if hi < 0 || lo < 0 {
			dst = append(dst, "%25"...)
			continue
		}
		b := byte(hi<<4 | lo)
		i += 2
		switch {
		case b <= ' ' || b == 0x7f || strings.IndexByte(`/\%?#;`, b) >= 0:
			const digits = "0123456789ABCDEF"
			dst = append(dst, '%', digits[b>>4], digits[b&15])
		default:
			dst = append(dst, b)
		}
	}
	return dst
}

// unhex returns the value of the hex digit s[i], or -1.
func unhex(s string, i int) int {
	if i >= len(s) {
		return -1
	}
	switch c := s[i]; {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}
