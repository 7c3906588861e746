// Package clusterslot knows Redis Cluster's key slots: a key's slot, a
// slot map learnt from CLUSTER NODES, and the redirections (-MOVED, -ASK)
// and cluster errors (-TRYAGAIN, -CLUSTERDOWN) a node answers. It is pure:
// no SDK, no allocation per call of Slot, and its parsers read untrusted
// text with bounded work and no recursion.
package clusterslot

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// crc16Table is CRC16/XMODEM (polynomial 0x1021, initial value 0, no
// reflection), one entry per byte value.
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// crc16 returns the CRC16/XMODEM of s; crc16("123456789") is 0x31C3.
func crc16(s string) uint16 {
	var c uint16
	for i := 0; i < len(s); i++ {
		c = c<<8 ^ crc16Table[byte(c>>8)^s[i]]
	}
	return c
}

// Slot returns key's hash slot, as CLUSTER KEYSLOT does. When key holds a
// '{' and, after it, a '}' with at least one byte between the first '{' and
// the first '}' after it, only those bytes (the hash tag) are hashed: so
// "{user1000}.following" and "{user1000}.followers" share a slot, and "{}x"
// hashes whole. Slot("foo") is 12182.
func Slot(key string) uint16 {
	for i := 0; i < len(key); i++ {
		if key[i] != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j > i+1 {
					key = key[i+1 : j]
				}
				break
			}
		}
		break
	}
	return crc16(key) % Slots
}

const (
	// Unknown marks a slot whose owner is not learnt yet: send to a seed
	// node, and -MOVED corrects it.
	Unknown uint8 = 0xFF
	// Unlisted marks a slot owned by a master that is not in redis.nodes:
	// its calls get failure_mode.
	Unlisted uint8 = 0xFE
)

// Map holds each slot's owner: a node index (into redis.nodes), Unknown or
// Unlisted. Its zero value says node 0 for every slot: Reset it first.
type Map [Slots]uint8

// Reset marks every slot Unknown.
func (m *Map) Reset() {
	for i := range m {
		m[i] = Unknown
	}
}

// Owner returns slot's owner, Unknown for a slot out of range.
func (m *Map) Owner(slot uint16) uint8 {
	if slot >= Slots {
		return Unknown
	}
	return m[slot]
}

// Set records node as slot's owner; a slot out of range is ignored.
func (m *Map) Set(slot uint16, node uint8) {
	if slot < Slots {
		m[slot] = node
	}
}
