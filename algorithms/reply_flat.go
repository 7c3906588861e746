package algorithms

// ParseRESP fills d from the script's reply in RESP, when it is what the
// script returns: one flat array of integers, exactly b. It reads it in
// place, with no decoded tree. ok is false for any other reply (an error,
// another shape, trailing bytes): decode it and call Parse.
func (d *Decision) ParseRESP(b []byte, nb, n int) (ok bool, err error) {
	return d.ParseRESPCall(b, nb, n, nil)
}

// ParseRESPCall is ParseRESP for a call with choices; see FromIntsCall.
func (d *Decision) ParseRESPCall(b []byte, nb, n int, choices []Choice) (ok bool, err error) {
	var buf [smallReply]int64
	ints, ok := AppendFlatInts(buf[:0], b, smallReply)
	if !ok || len(ints) < 2 {
		return false, nil
	}
	return true, d.FromIntsCall(ints, nb, n, choices)
}

// AppendFlatInts appends to dst the integers of b when b is exactly one
// RESP array of 1 to most integers, read in place: what the script
// returns. ok is false for anything else (an error reply, another shape,
// trailing bytes), which a decoder must read.
func AppendFlatInts(dst []int64, b []byte, most int) (ints []int64, ok bool) {
	count, i, ok := respLine(b, 0, '*')
	if !ok || count < 1 || count > int64(most) || count > int64(len(b)/4) {
		return dst, false
	}
	for range count {
		var v int64
		if v, i, ok = respLine(b, i, ':'); !ok {
			return dst, false
		}
		dst = append(dst, v)
	}
	return dst, i == len(b)
}

// respLine reads "<kind><integer>\r\n" at b[i:], returning the integer and
// the offset past the line.
func respLine(b []byte, i int, kind byte) (v int64, next int, ok bool) {
	if i >= len(b) || b[i] != kind {
		return 0, i, false
	}
	return ParseIntAt(b, i+1, '\r', '\n')
}

// ParseIntAt reads a decimal integer at b[i:] in canonical form (no "+",
// no leading zero, no "-0"), ending in end (and then end2, unless 0). It
// returns the offset past the terminator.
func ParseIntAt(b []byte, i int, end, end2 byte) (v int64, next int, ok bool) {
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	start := i
	for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		if i-start >= 18 { // keeps v within int64
			return 0, i, false
		}
		v = v*10 + int64(b[i]-'0')
	}
	digits := i - start
	if digits == 0 || digits > 1 && b[start] == '0' || neg && v == 0 {
		return 0, i, false
	}
	if i >= len(b) || b[i] != end {
		return 0, i, false
	}
	i++
	if end2 != 0 {
		if i >= len(b) || b[i] != end2 {
			return 0, i, false
		}
		i++
	}
	if neg {
		v = -v
	}
	return v, i, true
}
