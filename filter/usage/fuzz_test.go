package usage

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
	"github.com/tidwall/gjson"
)

// usageFuzzFields are the field sets the fuzz targets pick from.
var usageFuzzFields = []*Fields{
	usagePreset("openai_chat"), usagePreset("openai_responses"), usagePreset("anthropic"),
	Paths([]string{"n"}),
	Paths([]string{"a.n", "b"}),
}

// usageRandomChunks cuts b at random places, with empty chunks at times.
func usageRandomChunks(b []byte, seed uint64) [][]byte {
	r := rand.New(rand.NewPCG(seed, seed>>32))
	var out [][]byte
	for len(b) > 0 {
		n := r.IntN(min(len(b), 1+r.IntN(64))) + 1
		if r.IntN(8) == 0 {
			n = 0
		}
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// usageRefInt is the reference reading of a field.
func usageRefInt(r gjson.Result) (int64, bool) {
	if r.Type != gjson.Number || strings.Trim(r.Raw, "0123456789") != "" {
		return 0, false
	}
	v, err := strconv.ParseInt(r.Raw, 10, 64)
	return v, err == nil && v <= 1<<53
}

// usageRefSSE reads a whole event stream the simple way: lines first,
// then events.
func usageRefSSE(f *Fields, in []byte) (int64, bool) {
	paths := f.sse
	s := strings.TrimPrefix(string(in), bom)
	var lines []string
	for {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			break // an unterminated line is dropped
		}
		lines = append(lines, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
	vals := make([]int64, f.slots)
	for k := range vals {
		vals[k] = -1
	}
	data := ""
	for _, line := range lines {
		if line != "" {
			name, value, _ := strings.Cut(line, ":")
			if name == "data" {
				data += strings.TrimPrefix(value, " ") + "\n"
			}
			continue
		}
		if data != "" && len(data) <= maxEvent {
			d := data[:len(data)-1]
			for k, p := range paths {
				if strings.Contains(d, p[strings.LastIndexByte(p, '.')+1:]) && jsonbound.ValidString(d) {
					if v, ok := usageRefInt(gjson.Get(d, p)); ok {
						vals[slot(f.sseSlot, k)] = v
					}
				}
			}
		}
		data = ""
	}
	return usageRefSum(f, vals)
}

// usageRefSum sums the counted slots found.
func usageRefSum(f *Fields, vals []int64) (total int64, found bool) {
	for k, v := range vals {
		if v >= 0 && f.counted&(1<<k) != 0 {
			total, found = total+v, true
		}
	}
	return total, found
}

func FuzzUsageSSE(f *testing.F) {
	for _, s := range []string{usageChatSSE, usageResponsesSSE, usageAnthropicSSE,
		strings.ReplaceAll(usageAnthropicSSE, "\n", "\r\n"), strings.ReplaceAll(usageChatSSE, "\n", "\r"),
		"\xEF\xBB\xBFdata: {\"n\":5}\n\n", "data: {\"a\":\ndata\ndata: {\"n\":2}, \"b\":3}\r\n\r\n: c\n\n", "data: {\"n\":\r\ndata: 1}\r\n\r\n"} {
		f.Add([]byte(s), uint8(0), uint64(1))
		f.Add([]byte(s), uint8(3), uint64(2))
		f.Add([]byte(s), uint8(4), uint64(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, which uint8, seed uint64) {
		fields := usageFuzzFields[int(which)%len(usageFuzzFields)]
		want, wantFound := usageRefSSE(fields, in)
		bytewise := make([][]byte, len(in))
		for i := range in {
			bytewise[i] = in[i : i+1]
		}
		var u Scanner // reused
		for i, chunks := range [][][]byte{{in}, bytewise, usageRandomChunks(in, seed), usageRandomChunks(in, seed+1)} {
			if got, found := usageScan(&u, fields, true, 0, chunks...); got != want || found != wantFound {
				t.Fatalf("chunking %d, fields %v: got %d, %v; the reference %d, %v", i, fields.sse, got, found, want, wantFound)
			}
		}
	})
}

func FuzzUsageJSON(f *testing.F) {
	for _, s := range []string{usageChatJSON, usageResponsesJSON, usageAnthropicJSON, `{"n":5,"a":{"n":-1},"b":2.0}`} {
		f.Add([]byte(s), uint8(0), uint16(1<<15), uint64(1))
		f.Add([]byte(s), uint8(3), uint16(20), uint64(2))
	}
	f.Fuzz(func(t *testing.T, in []byte, which uint8, maxBytes uint16, seed uint64) {
		fields := usageFuzzFields[int(which)%len(usageFuzzFields)]
		vals := make([]int64, fields.slots)
		for k := range vals {
			vals[k] = -1
		}
		if len(in) <= int(maxBytes) && jsonbound.Valid(in) {
			for i, p := range fields.json {
				if v, ok := usageRefInt(gjson.GetBytes(in, p)); ok {
					vals[slot(fields.jsonSlot, i)] = v
				}
			}
		}
		want, wantFound := usageRefSum(fields, vals)
		var u Scanner
		for i := range uint64(2) {
			if got, found := usageScan(&u, fields, false, int(maxBytes), usageRandomChunks(in, seed+i)...); got != want || found != wantFound {
				t.Fatalf("fields %v: got %d, %v; the reference %d, %v", fields.json, got, found, want, wantFound)
			}
		}
	})
}
