package filter

import (
	"bytes"
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
	"github.com/tidwall/gjson"
)

// usageMaxEvent is the least bound on an event's data, each line counted
// with its '\n'; max_body_bytes raises it (an OpenAI Responses stream's
// response.completed repeats the whole output). A larger event is skipped
// whole, and never held beyond the bound.
const usageMaxEvent = 64 << 10

// Where the scanner is in a line of an event stream.
const (
	usageLineStart uint8 = iota // at the line's start
	usageLineName               // in the field name, before any ':'
	usageLineSpace              // in a data line, just after the ':'
	usageLineData               // in a data line's value
	usageLineSkip               // in a line to ignore
)

const usageBOM = "\xEF\xBB\xBF"

// writeSSE splits a chunk of an event stream (WHATWG HTML, "Server-sent
// events") into lines, ended by "\r\n", "\n" or "\r", even when split
// across chunks. It finds line ends with bytes.IndexByte, remembering the
// next '\n' and '\r' of the chunk so that each byte is scanned once for each.
// A whole line is read inline; a line split across chunks, or the first
// one (which may start with a BOM), goes through linePart and lineEnd.
func (u *usageScanner) writeSSE(p []byte) {
	if len(p) == 0 {
		return
	}
	i := 0
	if u.cr {
		u.cr = false
		if p[0] == '\n' {
			i = 1
		}
	}
	lf, cr := -1, -1
	for i < len(p) {
		if lf < i {
			lf = usageIndex(p, i, '\n')
		}
		if cr < i {
			cr = usageIndex(p, i, '\r')
		}
		end := min(lf, cr)
		if end == len(p) { // the line goes on in the next chunk
			if end > i {
				u.linePart(p[i:end])
			}
			return
		}
		if line := p[i:end]; u.st == usageLineStart && !u.first { // a whole line, read inline
			switch {
			case len(line) == 0:
				u.dispatch()
			case line[0] != 'd': // not data
			case len(line) >= 5 && string(line[:5]) == "data:":
				if line = line[5:]; len(line) > 0 && line[0] == ' ' {
					line = line[1:]
				}
				u.appendLine(line)
			case string(line) == "data":
				u.appendLine(nil)
			}
		} else {
			if len(line) > 0 {
				u.linePart(line)
			}
			u.lineEnd()
		}
		i = end + 1
		if p[end] == '\r' {
			if i == len(p) {
				u.cr = true
			} else if p[i] == '\n' {
				i++
			}
		}
	}
}

// usageIndex is the index of the first c in p from i, or len(p).
func usageIndex(p []byte, i int, c byte) int {
	if j := bytes.IndexByte(p[i:], c); j >= 0 {
		return i + j
	}
	return len(p)
}

// linePart reads a non-empty piece of the current line.
func (u *usageScanner) linePart(s []byte) {
	switch u.st {
	case usageLineStart:
		if s[0] == ':' {
			u.st = usageLineSkip // a comment
			return
		}
		u.st = usageLineName
		fallthrough
	case usageLineName:
		for k, c := range s {
			if c == ':' {
				if !u.isData() {
					u.st = usageLineSkip
					return
				}
				u.st = usageLineSpace
				u.dataPart(s[k+1:])
				return
			}
			if int(u.nameLen) == len(u.name) {
				u.st = usageLineSkip // too long for "data"
				return
			}
			u.name[u.nameLen] = c
			u.nameLen++
		}
	case usageLineSpace, usageLineData:
		u.dataPart(s)
	}
}

// dataPart reads a piece of a data line's value, dropping one leading space.
func (u *usageScanner) dataPart(s []byte) {
	if u.st == usageLineSpace && len(s) > 0 {
		if s[0] == ' ' {
			s = s[1:]
		}
		u.st = usageLineData
	}
	u.appendData(s)
}

var usageNewline = []byte{'\n'}

// appendLine appends a data line's value and its '\n'.
func (u *usageScanner) appendLine(v []byte) {
	if n := len(u.buf) + len(v) + 1; n <= cap(u.buf) && n <= u.eventMax && !u.over {
		u.buf = append(append(u.buf, v...), '\n')
		return
	}
	u.appendData(v)
	u.appendData(usageNewline)
}

func (u *usageScanner) appendData(s []byte) {
	if u.over {
		return
	}
	if len(u.buf)+len(s) > u.eventMax {
		u.over = true
		return
	}
	u.buf = usageAppend(u.buf, s, u.eventMax)
}

// lineEnd ends the current line: a blank line ends the event.
func (u *usageScanner) lineEnd() {
	switch u.st {
	case usageLineStart:
		u.dispatch()
	case usageLineName: // no ':', the whole line is the name
		if u.isData() {
			u.appendData(usageNewline)
		}
	case usageLineSpace, usageLineData:
		u.appendData(usageNewline)
	}
	u.st, u.nameLen, u.first = usageLineStart, 0, false
}

// isData reports whether the field name read is "data".
func (u *usageScanner) isData() bool {
	name := u.name[:u.nameLen]
	if u.first && bytes.HasPrefix(name, []byte(usageBOM)) {
		name = name[len(usageBOM):]
	}
	return string(name) == "data"
}

// dispatch reads the event that just ended, then forgets it.
func (u *usageScanner) dispatch() {
	data, over := u.buf, u.over
	u.buf, u.over = u.buf[:0], false
	if over || len(data) == 0 {
		return
	}
	s := bytesString(data[:len(data)-1]) // the last '\n' is not data
	if u.gate != "" && !strings.Contains(s, u.gate) {
		return
	}
	checked := false
	for k, p := range u.f.sse {
		if n := u.needles[k]; n != "" && !strings.Contains(s, n) {
			continue
		}
		if !checked {
			if !jsonbound.ValidString(s) {
				return
			}
			checked = true
		}
		if v, ok := usageInt(gjson.Get(s, p)); ok {
			u.vals[k] = v
		}
	}
}
