package wasmhost

import (
	"encoding/binary"
	"errors"
	"strings"
)

// encodePairs serializes key/value pairs the proxy-wasm way: a little-endian
// u32 count, then a (key size, value size) u32 pair per entry, then every key
// and value followed by a NUL byte.
func encodePairs(pairs [][2]string) []byte {
	size := 4
	for _, p := range pairs {
		size += 8 + len(p[0]) + 1 + len(p[1]) + 1
	}
	out := make([]byte, size)
	binary.LittleEndian.PutUint32(out, uint32(len(pairs)))
	off := 4
	for _, p := range pairs {
		binary.LittleEndian.PutUint32(out[off:], uint32(len(p[0])))
		binary.LittleEndian.PutUint32(out[off+4:], uint32(len(p[1])))
		off += 8
	}
	for _, p := range pairs {
		off += copy(out[off:], p[0]) + 1
		off += copy(out[off:], p[1]) + 1
	}
	return out
}

var errBadPairs = errors.New("malformed serialized header map")

// decodePairs parses encodePairs' format. An empty input is an empty map.
// Unlike proxy-wasm-cpp-host, which silently yields no pairs for malformed
// input, it reports an error so that the guest bug is surfaced.
func decodePairs(b []byte) ([][2]string, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if len(b) < 4 {
		return nil, errBadPairs
	}
	n := int(binary.LittleEndian.Uint32(b))
	if n > (len(b)-4)/8 {
		return nil, errBadPairs
	}
	sizes := b[4 : 4+8*n]
	data := b[4+8*n:]
	pairs := make([][2]string, 0, n)
	for i := 0; i < n; i++ {
		var kv [2]string
		for j := 0; j < 2; j++ {
			l := int(binary.LittleEndian.Uint32(sizes[8*i+4*j:]))
			if l < 0 || l+1 > len(data) || data[l] != 0 {
				return nil, errBadPairs
			}
			kv[j] = string(data[:l])
			data = data[l+1:]
		}
		pairs = append(pairs, kv)
	}
	return pairs, nil
}

// headerMap is an ordered multi-map of lower-case header names, as Envoy's
// header maps behave towards proxy-wasm: keys are lower-cased on the way in
// and looked up case-insensitively.
type headerMap struct {
	pairs [][2]string
}

func newHeaderMap(pairs [][2]string) *headerMap {
	m := &headerMap{}
	m.set(pairs)
	return m
}

func (m *headerMap) len() int { return len(m.pairs) }

// get returns the first value of key. Envoy does the same (and notes that
// it should rather join repeated values).
func (m *headerMap) get(key string) (string, bool) {
	key = strings.ToLower(key)
	for _, p := range m.pairs {
		if p[0] == key {
			return p[1], true
		}
	}
	return "", false
}

func (m *headerMap) add(key, value string) {
	m.pairs = append(m.pairs, [2]string{strings.ToLower(key), value})
}

// replace sets the first entry of key to value and drops the others, or
// appends the entry when key is absent.
func (m *headerMap) replace(key, value string) {
	key = strings.ToLower(key)
	out := m.pairs[:0]
	found := false
	for _, p := range m.pairs {
		if p[0] == key {
			if found {
				continue
			}
			found = true
			p[1] = value
		}
		out = append(out, p)
	}
	m.pairs = out
	if !found {
		m.pairs = append(m.pairs, [2]string{key, value})
	}
}

func (m *headerMap) remove(key string) {
	key = strings.ToLower(key)
	out := m.pairs[:0]
	for _, p := range m.pairs {
		if p[0] != key {
			out = append(out, p)
		}
	}
	m.pairs = out
}

func (m *headerMap) set(pairs [][2]string) {
	m.pairs = make([][2]string, 0, len(pairs))
	for _, p := range pairs {
		m.add(p[0], p[1])
	}
}

// byteSize approximates the wire size of the headers.
func (m *headerMap) byteSize() int {
	n := 0
	for _, p := range m.pairs {
		n += len(p[0]) + len(p[1])
	}
	return n
}
