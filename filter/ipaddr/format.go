package ipaddr

import "strconv"

// String is a as netip's Addr.String prints it: "203.0.113.7", or IPv6 in
// RFC 5952's form ("2001:db8::1": lower case, no leading zeros, the
// longest run of two or more zero groups, the first of equals, as "::").
// The zero Addr is "invalid IP".
func (a Addr) String() string {
	if a.fam == 0 {
		return "invalid IP"
	}
	var buf [39]byte
	return string(a.AppendTo(buf[:0]))
}

// AppendTo appends a's String to dst; nothing for the zero Addr.
func (a Addr) AppendTo(dst []byte) []byte {
	switch a.fam {
	case 4:
		for i, b := range a.ip[:4] {
			if i > 0 {
				dst = append(dst, '.')
			}
			dst = strconv.AppendUint(dst, uint64(b), 10)
		}
	case 6:
		dst = a.append6(dst)
	}
	return dst
}

func (a Addr) append6(dst []byte) []byte {
	group := func(i int) uint64 { return uint64(a.ip[2*i])<<8 | uint64(a.ip[2*i+1]) }
	// The longest run of zero groups, if two or more long.
	runStart, runLen := -1, 1
	for i := 0; i < 8; {
		j := i
		for j < 8 && group(j) == 0 {
			j++
		}
		if j-i > runLen {
			runStart, runLen = i, j-i
		}
		i = max(j, i+1)
	}
	for i := 0; i < 8; i++ {
		if i == runStart {
			dst = append(dst, ':', ':')
			i += runLen - 1
			continue
		}
		if i > 0 && i != runStart+runLen {
			dst = append(dst, ':')
		}
		dst = strconv.AppendUint(dst, group(i), 16)
	}
	return dst
}

// String is p as netip's Prefix.String prints it: "203.0.113.0/24",
// "2001:db8::/32".
func (p Prefix) String() string {
	var buf [43]byte
	return string(p.AppendTo(buf[:0]))
}

// AppendTo appends p's String to dst.
func (p Prefix) AppendTo(dst []byte) []byte {
	if p.addr.fam == 0 {
		return append(dst, "invalid Prefix"...)
	}
	dst = p.addr.AppendTo(dst)
	dst = append(dst, '/')
	return strconv.AppendUint(dst, uint64(p.bits), 10)
}
