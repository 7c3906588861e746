package pathnorm

import "strings"

// QueryUnescape decodes a query component as url.QueryUnescape does
// ("+" is a space, "%XX" a byte); false when a "%" starts no such escape.
// The filter decodes query key parts with it rather than link net/url,
// which brings net/netip's init into every VM's start-up.
func QueryUnescape(s string) (string, bool) {
	escapes, plus := 0, false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '%':
			if i+2 >= len(s) || unhex(s, i+1) < 0 || unhex(s, i+2) < 0 {
				return "", false
			}
			escapes++
			i += 2
		case '+':
			plus = true
		}
	}
	if escapes == 0 && !plus {
		return s, true
	}
	var b strings.Builder
	b.Grow(len(s) - 2*escapes)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '%':
			b.WriteByte(byte(unhex(s, i+1)<<4 | unhex(s, i+2)))
			i += 2
		case '+':
			b.WriteByte(' ')
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}
