package wasmhost

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Key slots and routing keys of Redis Cluster, as in the cluster
// specification (https://redis.io/docs/latest/operate/oss_and_stack/reference/cluster-spec/):
// a key's slot is CRC16 (XMODEM) of the key, or of its hash tag, mod 16384.

// numSlots is the number of hash slots of a Redis Cluster.
const numSlots = 16384

// crc16Table is CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0,
// no reflection), one entry per byte value.
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

// crc16 returns the CRC16/XMODEM of b; crc16("123456789") is 0x31C3.
func crc16(b []byte) uint16 {
	var c uint16
	for _, x := range b {
		c = c<<8 ^ crc16Table[byte(c>>8)^x]
	}
	return c
}

// keySlot returns the cluster slot of a key. When the key holds a '{' and a
// later '}' with at least one byte between the first '{' and the first '}'
// after it, only those bytes are hashed, so "{user1000}.following" and
// "{user1000}.followers" share a slot. keySlot("foo") is 12182.
func keySlot(key []byte) uint16 {
	if open := bytes.IndexByte(key, '{'); open >= 0 {
		if n := bytes.IndexByte(key[open+1:], '}'); n > 0 {
			key = key[open+1 : open+1+n]
		}
	}
	return crc16(key) % numSlots
}

// keylessCommands go to any node: they name no key, or (SCRIPT, CLUSTER,
// FUNCTION) act on the node itself.
var keylessCommands = map[string]bool{
	"PING": true, "ECHO": true, "TIME": true, "INFO": true, "DBSIZE": true,
	"SCRIPT": true, "FUNCTION": true, "CLUSTER": true, "COMMAND": true,
	"CONFIG": true, "CLIENT": true, "ACL": true, "HELLO": true, "AUTH": true,
	"SELECT": true, "READONLY": true, "READWRITE": true, "RANDOMKEY": true,
	"KEYS": true, "SCAN": true, "FLUSHDB": true, "FLUSHALL": true, "WAIT": true,
}

// routingKey returns the key a cluster proxy routes a command by: for EVAL,
// EVALSHA, FCALL and their _RO forms the first key after numkeys, for the
// keyless commands above none, and for any other command its first
// argument. ok is false when there is no key; then any node will do.
func routingKey(args [][]byte) (key []byte, ok bool) {
	if len(args) < 2 {
		return nil, false
	}
	name := strings.ToUpper(string(args[0]))
	switch {
	case keylessCommands[name]:
		return nil, false
	case name == "EVAL", name == "EVALSHA", name == "EVAL_RO", name == "EVALSHA_RO",
		name == "FCALL", name == "FCALL_RO":
		if len(args) < 4 {
			return nil, false
		}
		if n, err := strconv.Atoi(string(args[2])); err != nil || n <= 0 {
			return nil, false
		}
		return args[3], true
	}
	return args[1], true
}

// respArgs returns the arguments of a command encoded as RESP: one array of
// bulk strings and nothing after it.
func respArgs(query []byte) ([][]byte, error) {
	v, err := respDecode(query)
	if err != nil {
		return nil, err
	}
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, errors.New("resp: a command is a non-empty array")
	}
	args := make([][]byte, len(arr))
	for i, a := range arr {
		if args[i], ok = a.([]byte); !ok || args[i] == nil {
			return nil, fmt.Errorf("resp: command argument %d is not a bulk string", i)
		}
	}
	return args, nil
}

// respError is a RESP error reply, e.g. "MOVED 3999 127.0.0.1:6381".
type respError string

// respDecode decodes exactly one RESP2 value: a simple string (string),
// an error (respError), an integer (int64), a bulk string ([]byte, nil
// when null, sharing b's memory) or an array ([]any, nil when null).
// Framing is respFrameLen's, so the limits and errors are the same.
func respDecode(b []byte) (any, error) {
	n, err := respFrameLen(b)
	if err != nil {
		return nil, err
	}
	if n != len(b) {
		return nil, fmt.Errorf("resp: %d bytes after the value", len(b)-n)
	}
	v, _, err := respValueAt(b, 0)
	return v, err
}

// respValueAt decodes the value at off in b, which respFrameLen has
// checked, and returns the offset just past it.
func respValueAt(b []byte, off int) (any, int, error) {
	typ := b[off]
	line, next, err := respLine(b, off+1)
	if err != nil {
		return nil, 0, err
	}
	switch typ {
	case '+':
		return string(line), next, nil
	case '-':
		return respError(line), next, nil
	case ':':
		n, err := strconv.ParseInt(string(line), 10, 64)
		return n, next, err
	case '$':
		n, err := respCount(line, respMaxBulk)
		if err != nil || n < 0 {
			return nil, next, err
		}
		return b[next : next+n : next+n], next + n + 2, nil
	case '*':
		n, err := respCount(line, respMaxElements)
		if err != nil || n < 0 {
			return nil, next, err
		}
		arr := make([]any, n)
		for i := range arr {
			if arr[i], next, err = respValueAt(b, next); err != nil {
				return nil, 0, err
			}
		}
		return arr, next, nil
	}
	return nil, 0, fmt.Errorf("resp: type %q is not decoded here", typ)
}
