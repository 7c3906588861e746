package usage

import (
	"bytes"
	"compress/gzip"
	"io"
	"strings"
	"sync"
)

// A body the upstream compressed (content-encoding: gzip) is kept as it
// comes, compressed, up to the body's bound, and inflated at Finish into
// the JSON or event reader, up to the same bound decoded: a body that
// inflates beyond it (a gzip bomb) stops there, having cost at most that
// much work, and its usage is missing. So is that of a body whose gzip is
// truncated or corrupt (its CRC-32 or length do not match), or of any
// other coding (br, zstd, deflate). A stream is read at its end, not as
// it passes, since inflating cannot pause at a chunk's end.

type encoding uint8

const (
	identity encoding = iota
	gzipped
	unread // a coding not read: the usage is missing
)

// gzipOut is the size of the buffer a body is inflated through.
const gzipOut = 8 << 10

// gzipState is a gzip body held.
type gzipState struct {
	in   []byte // the compressed body
	over bool   // in passed the bound
	src  bytes.Reader
}

// inflater is the VM's gzip reader and the buffer it inflates through
// (about 50 KB with its window and Huffman tables), made when a response
// is first inflated and shared by every stream after: a body is inflated
// whole within one call (Finish), so one at a time. A VM whose rules read
// no compressed body never makes it.
var inflater struct {
	sync.Mutex // for native callers on several goroutines; a VM has one
	zr         *gzip.Reader
	out        []byte
}

func (z *gzipState) reset() { z.in, z.over = z.in[:0], false }

// SetEncoding takes, after Start, the response's content-encoding: none,
// identity, gzip or x-gzip (in any case) are read.
func (u *Scanner) SetEncoding(ce string) {
	switch ce = strings.TrimSpace(ce); {
	case ce == "" || strings.EqualFold(ce, "identity"):
		u.enc = identity
	case strings.EqualFold(ce, "gzip") || strings.EqualFold(ce, "x-gzip"):
		u.enc = gzipped
	default:
		u.enc = unread
	}
}

// bound is what a compressed body may hold, compressed and decoded: the
// JSON body's bound, or an event's.
func (u *Scanner) bound() int {
	if u.sse {
		return u.eventMax
	}
	return u.max
}

// writeEncoded keeps a chunk of a compressed body.
func (u *Scanner) writeEncoded(chunk []byte) {
	z := &u.z
	switch {
	case u.enc == unread || z.over:
	case len(z.in)+len(chunk) > u.bound():
		z.over, z.in = true, z.in[:0]
	default:
		z.in = appendCapped(z.in, chunk, u.bound())
	}
}

// decode inflates the body held into the reader of its kind; false when
// it cannot be read whole within the bound, which forgets anything read.
func (u *Scanner) decode() bool {
	if u.enc == unread || u.z.over || !u.inflate() {
		u.over = true
		for k := range u.vals {
			u.vals[k] = -1
		}
		u.modelLen = -1
		return false
	}
	return true
}

func (u *Scanner) inflate() bool {
	z, f := &u.z, &inflater
	f.Lock()
	defer f.Unlock()
	z.src.Reset(z.in)
	if f.zr == nil {
		zr, err := gzip.NewReader(&z.src)
		if err != nil {
			return false
		}
		f.zr = zr
	} else if f.zr.Reset(&z.src) != nil {
		return false
	}
	if f.out == nil {
		f.out = make([]byte, gzipOut)
	}
	left := u.bound() // decoded bytes still allowed
	for {
		n, err := f.zr.Read(f.out[:min(len(f.out), left+1)])
		if left -= n; left < 0 {
			return false
		}
		u.write(f.out[:n])
		switch {
		case err == nil:
		case err == io.EOF: // the whole body, its CRC-32 and length checked
			return true
		default:
			return false
		}
	}
}
