package usage

import (
	"bytes"
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

// maxEvent is the least bound on an event's data, each line counted
// with its '\n'; max_body_bytes raises it (an OpenAI Responses stream's
// response.completed repeats the whole output). A larger event is skipped
// whole, and never held beyond the bound.
const maxEvent = 64 << 10

// Where the scanner is in a line of an event stream.
const (
	lineStart uint8 = iota // at the line's start
	lineName               // in the field name, before any ':'
	lineSpace              // in a data line, just after the ':'
	lineData               // in a data line's value
	lineSkip               // in a line to ignore
)

const bom = "\xEF\xBB\xBF"

// writeSSE splits a chunk of an event stream (WHATWG HTML, "Server-sent
// events") into lines, ended by "\r\n", "\n" or "\r", even when split
// across chunks. It finds line ends with bytes.IndexByte, remembering the
// next '\n' and '\r' of the chunk so that each byte is scanned once for each.
// A whole line is read inline; a line split across chunks, or the first
// one (which may start with a BOM), goes through linePart and lineEnd.
func (u *Scanner) writeSSE(p []byte) {
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
			lf = indexFrom(p, i, '\n')
		}
		if cr < i {
			cr = indexFrom(p, i, '\r')
		}
		end := min(lf, cr)
		if end == len(p) { // the line goes on in the next chunk
			if end > i {
				u.linePart(p[i:end])
			}
			return
		}
		if line := p[i:end]; u.st == lineStart && !u.first { // a whole line, read inline
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

// indexFrom is the index of the first c in p from i, or len(p).
func indexFrom(p []byte, i int, c byte) int {
	if j := bytes.IndexByte(p[i:], c); j >= 0 {
		return i + j
	}
	return len(p)
}

// linePart reads a non-empty piece of the current line.
func (u *Scanner) linePart(s []byte) {
	switch u.st {
	case lineStart:
		if s[0] == ':' {
			u.st = lineSkip // a comment
			return
		}
		u.st = lineName
		fallthrough
	case lineName:
		for k, c := range s {
			if c == ':' {
				if !u.isData() {
					u.st = lineSkip
					return
				}
				u.st = lineSpace
				u.dataPart(s[k+1:])
				return
			}
			if int(u.nameLen) == len(u.name) {
				u.st = lineSkip // too long for "data"
				return
			}
			u.name[u.nameLen] = c
			u.nameLen++
		}
	case lineSpace, lineData:
		u.dataPart(s)
	}
}

// dataPart reads a piece of a data line's value, dropping one leading space.
func (u *Scanner) dataPart(s []byte) {
	if u.st == lineSpace && len(s) > 0 {
		if s[0] == ' ' {
			s = s[1:]
		}
		u.st = lineData
	}
	u.appendData(s)
}

var newline = []byte{'\n'}

// appendLine appends a data line's value and its '\n'.
func (u *Scanner) appendLine(v []byte) {
	if n := len(u.buf) + len(v) + 1; n <= cap(u.buf) && n <= u.eventMax && !u.over {
		u.buf = append(append(u.buf, v...), '\n')
		return
	}
	u.appendData(v)
	u.appendData(newline)
}

func (u *Scanner) appendData(s []byte) {
	if u.over {
		return
	}
	if len(u.buf)+len(s) > u.eventMax {
		u.over = true
		return
	}
	u.buf = appendCapped(u.buf, s, u.eventMax)
}

// lineEnd ends the current line: a blank line ends the event.
func (u *Scanner) lineEnd() {
	switch u.st {
	case lineStart:
		u.dispatch()
	case lineName: // no ':', the whole line is the name
		if u.isData() {
			u.appendData(newline)
		}
	case lineSpace, lineData:
		u.appendData(newline)
	}
	u.st, u.nameLen, u.first = lineStart, 0, false
}

// isData reports whether the field name read is "data".
func (u *Scanner) isData() bool {
	name := u.name[:u.nameLen]
	if u.first && bytes.HasPrefix(name, []byte(bom)) {
		name = name[len(bom):]
	}
	return string(name) == "data"
}

// dispatch reads the event that just ended, then forgets it.
func (u *Scanner) dispatch() {
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
	riders := len(u.f.sse) - u.f.riders
	for k, p := range u.f.sse {
		if k >= riders {
			if !checked {
				return
			}
		} else if n := u.needles[k]; n != "" && !strings.Contains(s, n) {
			continue
		}
		if !checked {
			if !jsonbound.ValidString(s) {
				return
			}
			checked = true
		}
		u.note(slot(u.f.sseSlot, k), jsonvalue.Get(s, p))
	}
	if checked {
		u.readModel(s, u.f.model[1])
		u.readTier(s, u.f.tier[1])
		u.readTier(s, u.f.tier[2])
	}
}
