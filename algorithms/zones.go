package algorithms

import (
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"time"
)

//go:generate go run ./internal/zonegen

// A calendar needs a zone's rules from now on only, not its history: the
// POSIX TZ string at the end of its TZif file, which zoneTable holds per
// zone (kilobytes, where the zone database Go can embed takes 376 KB of
// the module). A zone is built only when a configuration names it, as a
// TZif file of that string and no transitions, which Go applies to every
// instant. The five zones whose files list transitions after 2025 keep
// those too, from the last one before: the string cannot give Morocco's
// Ramadan hours (Africa/Casablanca, Africa/El_Aaiun) nor Gaza's and
// Hebron's, and America/Coyhaique changed its rule in 2025. Answers for
// instants before then may differ from the full database's; a calendar
// asks about the proxy's clock and at most 100 days before it.

var errZone = errors.New("unknown time zone")

// loadZone builds the named zone from zoneTable.
func loadZone(name string) (*time.Location, error) {
	if name == "" || strings.ContainsAny(name, "\t\n") {
		return nil, errZone
	}
	i := strings.Index(zoneTable, "\n"+name+"\t")
	if i < 0 {
		return nil, errZone
	}
	line := zoneTable[i+len(name)+2:]
	line = line[:strings.IndexByte(line, '\n')]
	rule, rest, _ := strings.Cut(line, "\t")
	types, trans, _ := strings.Cut(rest, "\t")
	tzif, ok := appendTZif(nil, rule, types, trans)
	if !ok {
		return nil, errZone
	}
	return time.LoadLocationFromTZData(name, tzif)
}

// appendTZif appends a TZif file (version 2, RFC 8536) with the given
// footer rule, types ("offset,abbreviation,isdst;...", none for one
// placeholder type) and transitions ("unix>type ..."); false if a field
// does not parse.
func appendTZif(dst []byte, rule, types, trans string) ([]byte, bool) {
	var ts []string
	if trans != "" {
		ts = strings.Split(trans, " ")
	}
	ty := []string{"0,,0"} // unused: with no transitions, the rule applies throughout
	if types != "" {
		ty = strings.Split(types, ";")
	}
	var ttinfo, chars []byte
	for _, t := range ty {
		f := strings.Split(t, ",")
		if len(f) != 3 || len(chars) > 255 || f[2] != "0" && f[2] != "1" {
			return dst, false
		}
		off, err := strconv.ParseInt(f[0], 10, 32)
		if err != nil {
			return dst, false
		}
		ttinfo = binary.BigEndian.AppendUint32(ttinfo, uint32(int32(off)))
		ttinfo = append(ttinfo, f[2][0]-'0', byte(len(chars)))
		chars = append(append(chars, f[1]...), 0)
	}
	dst = append(dst, "TZif2"...)
	dst = append(dst, make([]byte, 15+24)...) // reserved; an empty version 1 block
	dst = append(dst, "TZif2"...)
	dst = append(dst, make([]byte, 15+12)...) // reserved; no UT, standard or leap indicators
	for _, n := range []int{len(ts), len(ty), len(chars)} {
		dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	}
	idx := make([]byte, 0, len(ts))
	for _, t := range ts {
		at, k, _ := strings.Cut(t, ">")
		sec, err1 := strconv.ParseInt(at, 10, 64)
		i, err2 := strconv.Atoi(k)
		if err1 != nil || err2 != nil || i < 0 || i >= len(ty) {
			return dst, false
		}
		dst = binary.BigEndian.AppendUint64(dst, uint64(sec))
		idx = append(idx, byte(i))
	}
	dst = append(append(append(dst, idx...), ttinfo...), chars...)
	return append(append(append(dst, '\n'), rule...), '\n'), true
}
