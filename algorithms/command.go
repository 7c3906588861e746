package algorithms

import "strconv"

// Framing is how a command's arguments are written for a transport.
type Framing uint8

const (
	// RESP is an array of bulk strings, as Redis reads a command.
	RESP Framing = iota
	// WebdisPath is the arguments joined by "/", as Webdis reads the body
	// of a POST: every byte outside A-Z a-z 0-9 - _ ~ percent-encoded, "."
	// included, so no argument can end the command early or pick an
	// output format.
	WebdisPath
)

// AppendCommand appends to dst, framed as f, the command
//
//	FCALL <decide> <numkeys> <blocks...> <keys...> <len(blocks)> <4 args per check>
//
// (per check: algorithm, a, b, and cost, or -1 when CheckOnly) deciding
// checks, unless a key of blocks exists (an operator's manual block).
// inv picks the head: FCALL and the function, EVALSHA and the script's
// SHA, or EVAL and its source (the -NOSCRIPT fallback, which also loads
// it). It allocates nothing beyond growing dst.
func AppendCommand(dst []byte, f Framing, inv Invoke, blocks []string, checks []Check) []byte {
	return appendPlain(dst, f, inv, OpDecide, blocks, checks)
}

func appendPlain(dst []byte, f Framing, inv Invoke, op Op, blocks []string, checks []Check) []byte {
	w := argWriter{f: f, dst: dst}
	w.head(inv, op, 4+len(blocks)+len(checks)*5, len(blocks)+len(checks))
	for _, b := range blocks {
		w.str(b)
	}
	for i := range checks {
		w.str(checks[i].Key)
	}
	w.int(int64(len(blocks)))
	for i := range checks {
		w.check(&checks[i])
	}
	return w.dst
}

type argWriter struct {
	f     Framing
	dst   []byte
	count int
}

// head starts a call of op with args arguments in all, numkeys of them
// keys, as inv says.
func (w *argWriter) head(inv Invoke, op Op, args, numkeys int) {
	if w.f == RESP {
		w.dst = append(w.dst, '*')
		w.dst = strconv.AppendInt(w.dst, int64(args), 10)
		w.dst = append(w.dst, '\r', '\n')
	}
	switch inv {
	case FCall:
		w.str("FCALL")
		w.str(function(op))
	case EvalSHA:
		w.str("EVALSHA")
		w.str(Script.SHA)
	default:
		w.str("EVAL")
		w.str(Script.Source())
	}
	w.int(int64(numkeys))
}

func (w *argWriter) start(n int) {
	if w.f == RESP {
		if n < 100 { // most arguments: no strconv
			w.dst = appendSmall(append(w.dst, '$'), n)
		} else {
			w.dst = strconv.AppendInt(append(w.dst, '$'), int64(n), 10)
		}
		w.dst = append(w.dst, '\r', '\n')
	} else if w.count > 0 {
		w.dst = append(w.dst, '/')
	}
	w.count++
}

func (w *argWriter) end() {
	if w.f == RESP {
		w.dst = append(w.dst, '\r', '\n')
	}
}

func (w *argWriter) str(s string) {
	w.start(len(s))
	if w.f == RESP {
		w.dst = append(w.dst, s...)
	} else {
		w.dst = appendPercentEncoded(w.dst, s)
	}
	w.end()
}

// limit writes a limit's algorithm, a and b.
func (w *argWriter) limit(l *Limit) {
	a, b := l.args()
	w.str(l.Algorithm.code())
	w.int(a)
	if l.Algorithm == CalendarWindow {
		var buf [48]byte
		bs, _ := l.Calendar.wire(buf[:0]) // Validate loaded its zone
		w.str(string(bs))
		return
	}
	w.int(b)
}

// int writes a decimal, which needs no encoding in either framing.
func (w *argWriter) int(v int64) {
	if 0 <= v && v < 100 { // costs, counts: no strconv
		digits := 1
		if v >= 10 {
			digits = 2
		}
		w.start(digits)
		w.dst = appendSmall(w.dst, int(v))
		w.end()
		return
	}
	var buf [20]byte
	digits := strconv.AppendInt(buf[:0], v, 10)
	w.start(len(digits))
	w.dst = append(w.dst, digits...)
	w.end()
}

// appendSmall appends n, 0 <= n < 100, in decimal.
func appendSmall(dst []byte, n int) []byte {
	if n >= 10 {
		dst = append(dst, byte('0'+n/10))
	}
	return append(dst, byte('0'+n%10))
}

func appendPercentEncoded(dst []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '~' {
			dst = append(dst, c)
		} else {
			dst = append(dst, '%', hex[c>>4], hex[c&15])
		}
	}
	return dst
}

// AppendEpoch appends, framed as f, the call that reads the epoch key (an
// integer an operator's change bumps; 0 when unset): FCALL <epoch> 1
// <key> e, or its EVALSHA or EVAL as inv says.
func AppendEpoch(dst []byte, f Framing, inv Invoke, key string) []byte {
	w := argWriter{f: f, dst: dst}
	w.head(inv, OpEpoch, 5, 1)
	w.str(key)
	w.str("e")
	return w.dst
}
