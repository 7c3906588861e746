package redisproto

import (
	"errors"

	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
)

var (
	// ErrIncomplete means the input is a proper prefix of a valid reply:
	// retry with more bytes. It is returned as is, never wrapped.
	ErrIncomplete = errors.New("redisproto: incomplete reply")

	// ErrMalformed means the input can never become a valid reply, however
	// many bytes follow. It is returned wrapped, with a detail and the
	// offending byte offset; test for it with errors.Is.
	ErrMalformed = errors.New("redisproto: malformed reply")
)

// malformed returns an error wrapping ErrMalformed for input offset off.
func malformed(off int, what string, args ...any) error {
	return format.Errorf("%w: %s at offset %d", ErrMalformed, format.Sprintf(what, args...), off)
}

// Limits bounds what a Decoder accepts, so that hostile input can exhaust
// neither memory nor stack. Exceeding a limit makes a reply malformed, as
// soon as the excess is visible in the input.
type Limits struct {
	// MaxDepth is the deepest nesting of aggregates (arrays, maps, sets,
	// pushes and attributes). A flat array has depth 1.
	MaxDepth int

	// MaxBulkLen is the largest declared length of a bulk string, blob
	// error or verbatim string, and the longest line of a simple string,
	// error, double or big number.
	MaxBulkLen int

	// MaxElements is the largest number of values in one reply, counting
	// the reply itself, every element, and every key and value of a map or
	// attribute. An aggregate whose declared length would take the reply
	// past it is rejected at once.
	MaxElements int
}

// DefaultLimits are the limits a Decoder uses for each Limits field that is
// zero or negative. MaxBulkLen matches Redis's own proto-max-bulk-len.
var DefaultLimits = Limits{
	MaxDepth:    16,
	MaxBulkLen:  512 << 20,
	MaxElements: 1 << 20,
}

func (l Limits) withDefaults() Limits {
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultLimits.MaxDepth
	}
	if l.MaxBulkLen <= 0 {
		l.MaxBulkLen = DefaultLimits.MaxBulkLen
	}
	if l.MaxElements <= 0 {
		l.MaxElements = DefaultLimits.MaxElements
	}
	return l
}

// A Decoder decodes one reply at a time. It reuses its storage for the
// elements of aggregates, so decoding replies of a steady shape allocates
// nothing; in exchange, the Values it returns are valid only until the next
// call to Decode. The zero Decoder is ready to use. A Decoder must not be
// used by several goroutines at once.
type Decoder struct {
	// Limits bounds the replies accepted. Zero fields take DefaultLimits.
	Limits Limits

	frames []frame // open aggregates; frames[0] is the reply itself
	done   []Value // values read, in order, whose aggregates are still open
	peak   int     // done[:peak] may hold values of this reply, even past len
	slab   []Value // storage for Elems and Attrs; see alloc
	used   int     // slab[:used] is taken by the current reply
}

// frame is an aggregate being decoded. Its header is done[base-1] and its
// children so far are done[base:]; they move into the slab when the last
// one is read, and become the header's Elems.
type frame struct {
	kind Kind    // aggregate kind, kindAttr, or 0 for the reply itself
	left int     // values still to read
	base int     // index in done of the first child
	pend []Value // attributes read at this level, for the next value
}

// kindAttr marks the frame of a RESP3 attribute; it is not a Value kind.
const kindAttr Kind = 0xff

// Decode decodes the reply at the start of b and returns it with the number
// of bytes it used, attributes included. Bytes after the reply are ignored.
// On error n is 0, and err is ErrIncomplete or wraps ErrMalformed.
func (d *Decoder) Decode(b []byte) (Value, int, error) {
	p := parser{b: b, lim: d.Limits.withDefaults(), total: 1}
	d.reset()
	d.frames = append(d.frames, frame{left: 1})
	pos := 0
	for {
		// Read the next value or header into a new slot of done.
		top := &d.frames[len(d.frames)-1]
		d.done = append(d.done, Value{})
		v := &d.done[len(d.done)-1]
		k, next, err := p.next(v, pos, len(d.frames))
		if err != nil {
			return Value{}, 0, err
		}
		pos = next
		switch {
		case v.Kind == kindAttr && k == 0:
			d.peak = max(d.peak, len(d.done))
			d.done = d.done[:len(d.done)-1] // an empty attribute adds nothing
			continue
		case v.Kind == kindAttr:
			d.frames = append(d.frames, frame{kind: kindAttr, left: k, base: len(d.done)})
			continue
		}
		v.Attrs, top.pend = top.pend, nil
		if k > 0 {
			d.frames = append(d.frames, frame{kind: v.Kind, left: k, base: len(d.done)})
			continue
		}
		// A value is complete: count it, and close every aggregate it
		// completes.
		for {
			top := &d.frames[len(d.frames)-1]
			if top.left--; top.left > 0 {
				break
			}
			if len(d.frames) == 1 {
				return d.done[0], pos, nil
			}
			elems := d.alloc(len(d.done) - top.base)
			copy(elems, d.done[top.base:])
			d.peak = max(d.peak, len(d.done))
			d.done = d.done[:top.base]
			kind := top.kind
			*top = frame{}
			d.frames = d.frames[:len(d.frames)-1]
			if kind == kindAttr {
				d.done = d.done[:len(d.done)-1] // drop the attribute's header
				parent := &d.frames[len(d.frames)-1]
				parent.pend = d.join(parent.pend, elems)
				break
			}
			d.done[len(d.done)-1].Elems = elems
		}
	}
}

// Decode decodes the reply at the start of b with a new Decoder and
// DefaultLimits. Its result stays valid as long as b is unchanged.
func Decode(b []byte) (Value, int, error) {
	var d Decoder
	return d.Decode(b)
}

// reset forgets the previous reply, clearing the references it held so the
// Decoder does not pin the previous input.
func (d *Decoder) reset() {
	clear(d.slab[:d.used])
	clear(d.done[:max(d.peak, len(d.done))])
	clear(d.frames)
	d.used, d.peak = 0, 0
	d.done = d.done[:0]
	d.frames = d.frames[:0]
}

// alloc returns n Values of storage for the current reply. Full slabs are
// replaced, never grown in place, so slices handed out earlier stay valid.
// The slab left in place is the largest, and after a reply of a given shape
// it fits the next reply of that shape.
func (d *Decoder) alloc(n int) []Value {
	if n > len(d.slab)-d.used {
		d.slab = make([]Value, max(n, 2*len(d.slab), 16))
		d.used = 0
	}
	s := d.slab[d.used : d.used+n : d.used+n]
	d.used += n
	return s
}

// join returns the attribute pairs a followed by b.
func (d *Decoder) join(a, b []Value) []Value {
	if a == nil {
		return b
	}
	s := d.alloc(len(a) + len(b))
	copy(s[copy(s, a):], b)
	return s
}
