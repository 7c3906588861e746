// Package headermap reads a header map as proxy_get_header_map_pairs
// returns it: a u32 count, a (key size, value size) u32 pair per entry,
// then each key and value followed by a NUL, little-endian. It reads the
// map in place: a lookup allocates nothing (unless it joins repeated
// values), and its strings share the map's bytes, which the caller keeps
// until it is done with them.
package headermap

import (
	"encoding/binary"
	"strings"
	"unsafe"
)

// Map is a header map in proxy-wasm's serialized form.
type Map []byte

// Valid returns b as a Map, or an empty one when its sizes run past its
// end.
func Valid(b []byte) Map {
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

// Cursor walks a Map's entries in order.
type Cursor struct {
	m         Map
	i, n, off int
}

// Cursor starts a walk of m, which must be Valid's.
func (m Map) Cursor() Cursor {
	if len(m) < 4 {
		return Cursor{}
	}
	n := int(binary.LittleEndian.Uint32(m))
	return Cursor{m: m, n: n, off: 4 + 8*n}
}

// Next returns the next entry, or ok false after the last.
func (c *Cursor) Next() (k, v string, ok bool) {
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

// First returns the first value of the named header, as Envoy's
// get_header_map_value does.
func (m Map) First(name string) (string, bool) {
	for c := m.Cursor(); ; {
		k, v, ok := c.Next()
		if !ok {
			return "", false
		}
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
}

// Values returns every value of the named header, joined by ", " when it
// repeats, and whether the header is there at all, empty or not.
func (m Map) Values(name string) (string, bool) {
	var joined string
	found := false
	for c := m.Cursor(); ; {
		k, v, ok := c.Next()
		if !ok {
			break
		}
		if !strings.EqualFold(k, name) {
			continue
		}
		if found {
			joined += ", " + v
		} else {
			joined, found = v, true
		}
	}
	return joined, found
}

// Cookie returns the first value of the named cookie, unquoted, and
// whether it is non-empty.
func (m Map) Cookie(name string) (string, bool) {
	for cur := m.Cursor(); ; {
		k, v, ok := cur.Next()
		if !ok {
			break
		}
		if !strings.EqualFold(k, "cookie") {
			continue
		}
		for c := range strings.SplitSeq(v, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(c), "=")
			if ok && k == name {
				v = strings.Trim(v, `"`)
				return v, v != ""
			}
		}
	}
	return "", false
}

// Append appends pairs to dst in Map form.
func Append(dst []byte, pairs [][2]string) Map {
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

// bytesString is b as a string sharing its bytes.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
