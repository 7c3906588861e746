package filter

// TEMPORARY stand-in for filter/clusterslot (branch wp-config), deleted at
// the merge: the names map one to one (csX is clusterslot.X).

import (
	"errors"
	"strconv"
	"strings"
)

const (
	csSlots             = 16384
	csUnknown     uint8 = 0xFF
	csUnlisted    uint8 = 0xFE
	csNone              = csKind(0)
	csMoved             = csKind(1)
	csAsk               = csKind(2)
	csTryAgain          = csKind(3)
	csClusterDown       = csKind(4)
)

type csKind uint8

type csMap [csSlots]uint8

func (m *csMap) Reset() {
	for i := range m {
		m[i] = csUnknown
	}
}
func (m *csMap) Owner(slot uint16) uint8     { return m[slot%csSlots] }
func (m *csMap) Set(slot uint16, node uint8) { m[slot%csSlots] = node }

func csSlot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % csSlots
}

func csParseNodes(m *csMap, text string, addrs []string) (string, error) {
	m.Reset()
	unlisted := ""
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || !strings.Contains(f[2], "master") || strings.Contains(f[2], "fail") && !strings.Contains(f[2], "fail?") {
			continue
		}
		ep, _, _ := strings.Cut(f[1], ",")
		host := ""
		if _, h, ok := strings.Cut(f[1], ","); ok {
			host = h
		}
		ipport, _, _ := strings.Cut(ep, "@")
		_, port, _ := strings.Cut(ipport, ":")
		node := -1
		for i, a := range addrs {
			if a == ipport || host != "" && a == host+":"+port {
				node = i
			}
		}
		if node < 0 && len(f) > 8 && unlisted == "" {
			unlisted = ipport
			if host != "" {
				unlisted = host + ":" + port
			}
		}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue
			}
			lo, hi, rng := strings.Cut(r, "-")
			a, err := strconv.Atoi(lo)
			if err != nil {
				return "", errors.New("bad slot")
			}
			b := a
			if rng {
				if b, err = strconv.Atoi(hi); err != nil {
					return "", errors.New("bad slot")
				}
			}
			for s := a; s <= b && s < csSlots; s++ {
				if node < 0 {
					m[s] = csUnlisted
				} else {
					m[s] = uint8(node)
				}
			}
		}
	}
	return unlisted, nil
}

func csParseError(msg string) (csKind, uint16, string) {
	msg = strings.TrimPrefix(msg, "-")
	f := strings.Fields(msg)
	if len(f) == 0 {
		return csNone, 0, ""
	}
	switch f[0] {
	case "TRYAGAIN":
		return csTryAgain, 0, ""
	case "CLUSTERDOWN":
		return csClusterDown, 0, ""
	case "MOVED", "ASK":
		if len(f) != 3 {
			return csNone, 0, ""
		}
		n, err := strconv.Atoi(f[1])
		if err != nil || n < 0 || n >= csSlots {
			return csNone, 0, ""
		}
		if f[0] == "MOVED" {
			return csMoved, uint16(n), f[2]
		}
		return csAsk, uint16(n), f[2]
	}
	return csNone, 0, ""
}
