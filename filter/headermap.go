package filter

import (
	"encoding/binary"
	"strings"
	"unsafe"
)

// headerMap is a header map as proxy_get_header_map_pairs returns it: a
// u32 count, a (key size, value size) u32 pair per entry, then each key
// and value followed by a NUL, little-endian. The filter reads it in
// place: a lookup allocates nothing, and its strings share the map's
// bytes, which the stream keeps until it ends.
type headerMap []byte

// validHeaderMap returns b as a headerMap, or an empty one when its
// sizes run past its end.
func validHeaderMap(b []byte) headerMap {
	if len(b) < 4 {
		return nil
	}
	n := int(binary.LittleEndian.Uint32(b))
	if n > (len(b)-4)/8 {
		return nil
	}
	end := 4 + 8*n
	for i := range n {
		end += int(binary.LittleEndian.Uint32(b[4+8*i:])) + int(binary.LittleEndian.Uint32(b[8+8*i:])) + 2
		if end > len(b) || end < 0 {
			return nil
		}
	}
	return b
}

// headerCursor walks a headerMap's entries in order.
type headerCursor struct {
	m         headerMap
	i, n, off int
}

func (m headerMap) cursor() headerCursor {
	if len(m) < 4 {
		return headerCursor{}
	}
	n := int(binary.LittleEndian.Uint32(m))
	return headerCursor{m: m, n: n, off: 4 + 8*n}
}

// next returns the next entry, or ok false after the last.
func (c *headerCursor) next() (k, v string, ok bool) {
	if c.i >= c.n {
		return "", "", false
	}
	m := c.m
	kl, vl := int(binary.LittleEndian.Uint32(m[4+8*c.i:])), int(binary.LittleEndian.Uint32(m[8+8*c.i:]))
	k = bytesString(m[c.off : c.off+kl])
	v = bytesString(m[c.off+kl+1 : c.off+kl+1+vl])
	c.off += kl + vl + 2
	c.i++
	return k, v, true
}

// first returns the first value of the named header, as Envoy's
// get_header_map_value does.
func (m headerMap) first(name string) (string, bool) {
	for c := m.cursor(); ; {
		k, v, ok := c.next()
		if !ok {
			return "", false
		}
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
}

// appendHeaderMap appends pairs to dst in headerMap form.
func appendHeaderMap(dst []byte, pairs [][2]string) headerMap {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(pairs)))
	for _, p := range pairs {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(p[0])))
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(p[1])))
	}
	for _, p := range pairs {
		dst = append(append(dst, p[0]...), 0)
		dst = append(append(dst, p[1]...), 0)
	}
	return dst
}

// bytesString is b as a string sharing its bytes: b must not change while
// the string is in use.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// stringBytes is s as a byte slice sharing its bytes, for reading only.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
