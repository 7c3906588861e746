package clusterslot

import (
	"errors"
	"strconv"
)

// Bounds of a CLUSTER NODES reply: its text comes from Redis through
// Webdis, so it is read as untrusted.
const (
	maxText   = 1 << 20 // bytes
	maxLines  = 1000    // nodes
	maxTokens = Slots   // slot tokens on one line
	// maxAssigned bounds the slots written in all, so that overlapping
	// ranges cannot make the work grow beyond the text's size: a map
	// assigns each slot once, twice while a stale view lasts.
	maxAssigned = 2 * Slots
)

var (
	errTooLong      = errors.New("clusterslot: CLUSTER NODES reply longer than 1 MiB")
	errTooManyLines = errors.New("clusterslot: CLUSTER NODES reply of more than 1000 lines")
	errEmpty        = errors.New("clusterslot: empty CLUSTER NODES reply")
	errTooManyAddrs = errors.New("clusterslot: more than 254 node addresses")
)

// lineError says which line of a CLUSTER NODES reply is malformed.
type lineError struct {
	line int // from 1
	what string
}

func (e *lineError) Error() string {
	return "clusterslot: CLUSTER NODES line " + strconv.Itoa(e.line) + ": " + e.what
}

// ParseNodes resets m and fills it from a CLUSTER NODES reply: each line
//
//	<id> <ip:port@bus[,hostname]> <flags> <master> <ping> <pong> <epoch> <link> <slot>...
//
// where a slot token is "N", "N-M", or "[N->-id]" / "[N-<-id]" (a slot
// migrating or importing: ignored; its owner is the one listed). Only
// masters own slots. A master's endpoint matches addrs[i] as
// hostname:port, else ip:port, and its slots get owner i. Masters flagged
// fail, noaddr or handshake are skipped (their slots stay Unknown); one
// only suspected (fail?) is kept. The slots of a master that matches no
// address are Unlisted, and unlisted is the first such master's endpoint
// (hostname:port if it has a hostname), "" if none.
//
// On an error m holds what was read before it: a caller that must keep
// its map parses into another and copies it on success. Bounded: at most
// 1 MiB of text, 1000 lines, 16384 slot tokens a line, 32768 slots
// written; no recursion, and no allocation but for unlisted with a
// hostname, or an error.
func ParseNodes(m *Map, text string, addrs []string) (unlisted string, err error) {
	return ParseNodesFrom(m, text, addrs, -1)
}

// ParseNodesFrom is ParseNodes for the text addrs[self] gave: its own line
// (flag myself) with no IP, as a node that never met another prints it
// (":6379@16379", a cluster of one master), is addrs[self] when the ports
// agree. self -1 is no node.
func ParseNodesFrom(m *Map, text string, addrs []string, self int) (unlisted string, err error) {
	m.Reset()
	if len(text) > maxText {
		return "", errTooLong
	}
	if len(addrs) > int(Unlisted) {
		return "", errTooManyAddrs
	}
	lines, assigned := 0, 0
	for len(text) > 0 {
		line := text
		if i := indexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if line == "" {
			continue
		}
		if lines++; lines > maxLines {
			return unlisted, errTooManyLines
		}
		if err := parseLine(m, line, addrs, self, &unlisted, &assigned); err != "" {
			return unlisted, &lineError{lines, err}
		}
	}
	if lines == 0 {
		return "", errEmpty
	}
	return unlisted, nil
}

// parseLine reads one node's line into m, returning what is wrong with it
// ("" if nothing).
func parseLine(m *Map, line string, addrs []string, self int, unlisted *string, assigned *int) string {
	var f [8]string
	for i := range f {
		sp := indexByte(line, ' ')
		if sp < 0 {
			if i < len(f)-1 {
				return "fewer than 8 fields"
			}
			f[i], line = line, ""
			break
		}
		f[i], line = line[:sp], line[sp+1:]
	}
	if f[0] == "" {
		return "no node id"
	}
	master, myself, skip := flags(f[2])
	owner := Unknown
	var ep endpoint
	if master && !skip {
		var ok bool
		if ep, ok = parseEndpoint(f[1]); !ok {
			return "bad address"
		}
		owner = ep.match(addrs)
		if owner == Unlisted && myself && ep.ipPort[0] == ':' && self >= 0 && self < len(addrs) && hasPort(addrs[self], ep.port) {
			owner = uint8(self)
		}
	}
	tokens := 0
	for line != "" {
		tok := line
		if sp := indexByte(line, ' '); sp >= 0 {
			tok, line = line[:sp], line[sp+1:]
		} else {
			line = ""
		}
		if tok == "" {
			continue
		}
		if tokens++; tokens > maxTokens {
			return "more than 16384 slot tokens"
		}
		if tok[0] == '[' {
			if tok[len(tok)-1] != ']' {
				return "bad slot token"
			}
			continue
		}
		lo, hi, ok := slotRange(tok)
		if !ok {
			return "bad slot token"
		}
		if owner == Unknown {
			continue // a replica's line has none; a skipped master's are left Unknown
		}
		if *assigned += hi - lo + 1; *assigned > maxAssigned {
			return "more than 32768 slots in all"
		}
		if owner == Unlisted && *unlisted == "" {
			*unlisted = ep.String()
		}
		for s := lo; s <= hi; s++ {
			m[s] = owner
		}
	}
	return ""
}

// hasPort reports whether addr, host:port, ends in port.
func hasPort(addr, port string) bool {
	return len(addr) > len(port) && addr[len(addr)-len(port)-1] == ':' && addr[len(addr)-len(port):] == port
}

// flags reads a node's flags: whether it is a master, the node that
// answered (myself), and whether it is to be skipped (fail, noaddr,
// handshake).
func flags(s string) (master, myself, skip bool) {
	for s != "" {
		f := s
		if c := indexByte(s, ','); c >= 0 {
			f, s = s[:c], s[c+1:]
		} else {
			s = ""
		}
		switch f {
		case "master":
			master = true
		case "myself":
			myself = true
		case "fail", "noaddr", "handshake":
			skip = true
		}
	}
	return master, myself, skip
}

// slotRange reads "N" or "N-M" (N <= M < Slots).
func slotRange(tok string) (lo, hi int, ok bool) {
	d := indexByte(tok, '-')
	if d < 0 {
		lo, ok = number(tok)
		return lo, lo, ok && lo < Slots
	}
	lo, ok1 := number(tok[:d])
	hi, ok2 := number(tok[d+1:])
	return lo, hi, ok1 && ok2 && lo <= hi && hi < Slots
}
