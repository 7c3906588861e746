package wasmhost

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// This file is the host's own RESP framer. It finds where one reply ends and
// nothing more: the reply's bytes go to the guest untouched. It is written
// independently of the project's redisproto package on purpose, so that a
// codec bug cannot hide on both sides of the ABI.

// errIncomplete means the buffer holds only a prefix of a reply.
var errIncomplete = errors.New("resp: incomplete reply")

// Limits that keep a broken or hostile server from exhausting memory.
const (
	respMaxLine     = 64 << 10  // a status, error or integer line
	respMaxBulk     = 512 << 20 // Redis' own proto-max-bulk-len default
	respMaxElements = 1 << 24
	respMaxDepth    = 64
)

// respFrameLen returns the length of the first complete RESP2 or RESP3 reply
// in b. It returns errIncomplete when more bytes are needed, and another
// error when b cannot be the start of a valid reply.
func respFrameLen(b []byte) (int, error) {
	return respFrameEnd(b, 0, 0)
}

func respFrameEnd(b []byte, off, depth int) (int, error) {
	if depth > respMaxDepth {
		return 0, fmt.Errorf("resp: nesting deeper than %d", respMaxDepth)
	}
	if off >= len(b) {
		return 0, errIncomplete
	}
	typ := b[off]
	line, next, err := respLine(b, off+1)
	if err != nil {
		return 0, err
	}
	switch typ {
	case '+', '-', ',', '(': // simple string, error, double, big number
		return next, nil
	case ':': // integer
		if _, err := strconv.ParseInt(string(line), 10, 64); err != nil {
			return 0, fmt.Errorf("resp: bad integer %q", line)
		}
		return next, nil
	case '_': // RESP3 null
		if len(line) != 0 {
			return 0, fmt.Errorf("resp: bad null %q", line)
		}
		return next, nil
	case '#': // RESP3 boolean
		if len(line) != 1 || (line[0] != 't' && line[0] != 'f') {
			return 0, fmt.Errorf("resp: bad boolean %q", line)
		}
		return next, nil
	case '$', '!', '=': // bulk string, bulk error, verbatim string
		n, err := respCount(line, respMaxBulk)
		if err != nil {
			return 0, err
		}
		if n == -1 {
			if typ != '$' {
				return 0, fmt.Errorf("resp: null length for type %q", typ)
			}
			return next, nil
		}
		end := next + n + 2
		if end > len(b) {
			return 0, errIncomplete
		}
		if b[end-2] != '\r' || b[end-1] != '\n' {
			return 0, errors.New("resp: bulk string not terminated by CRLF")
		}
		return end, nil
	case '*', '~', '>', '%', '|': // array, set, push, map, attribute
		n, err := respCount(line, respMaxElements)
		if err != nil {
			return 0, err
		}
		if n == -1 {
			if typ != '*' {
				return 0, fmt.Errorf("resp: null length for type %q", typ)
			}
			return next, nil
		}
		if typ == '%' || typ == '|' {
			n *= 2
		}
		off = next
		for i := 0; i < n; i++ {
			if off, err = respFrameEnd(b, off, depth+1); err != nil {
				return 0, err
			}
		}
		if typ == '|' {
			// An attribute map only annotates the reply that follows it.
			return respFrameEnd(b, off, depth+1)
		}
		return off, nil
	}
	return 0, fmt.Errorf("resp: unknown type byte %q", typ)
}

// respLine returns the line starting at off, without its CRLF, and the
// offset just past the CRLF.
func respLine(b []byte, off int) (line []byte, next int, err error) {
	i := bytes.IndexByte(b[off:], '\n')
	if i < 0 {
		if len(b)-off > respMaxLine {
			return nil, 0, fmt.Errorf("resp: line longer than %d bytes", respMaxLine)
		}
		return nil, 0, errIncomplete
	}
	if i == 0 || b[off+i-1] != '\r' {
		return nil, 0, errors.New("resp: line not terminated by CRLF")
	}
	line = b[off : off+i-1]
	if bytes.IndexByte(line, '\r') >= 0 {
		return nil, 0, errors.New("resp: CR inside a line")
	}
	return line, off + i + 1, nil
}

// respCount parses a length or element count: -1 (null) or 0..max.
func respCount(line []byte, max int) (int, error) {
	n, err := strconv.Atoi(string(line))
	if err != nil || n < -1 || n > max {
		return 0, fmt.Errorf("resp: bad length %q", line)
	}
	return n, nil
}
