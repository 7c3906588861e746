package usage

import (
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
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

// usageRefValue is the reference reading of a field, in big rationals:
// absent (missing or null), a count (ok), or bad.
func usageRefValue(r jsonvalue.Value) (v int64, ok, isBad bool) {
	if !r.Exists() || r.Type == jsonvalue.Null {
		return 0, false, false
	}
	if r.Type != jsonvalue.Number || len(r.Raw) > 32 {
		return 0, false, true
	}
	// An exponent beyond ±100 is no count, unless the number is 0: keep
	// big.Rat from building 10^huge.
	mant, e, _ := strings.Cut(strings.ToLower(r.Raw), "e")
	if strings.Trim(mant, "-0.") == "" {
		return 0, true, false
	}
	if n, err := strconv.Atoi(strings.TrimPrefix(e, "+")); e != "" && (err != nil || n > 100 || n < -100) {
		return 0, false, true
	}
	q, okq := new(big.Rat).SetString(r.Raw)
	if !okq || !q.IsInt() || q.Sign() < 0 || q.Num().Cmp(big.NewInt(MaxValue)) > 0 {
		return 0, false, true
	}
	return q.Num().Int64(), true, false
}

// usageRefNote notes a field of slot k in vals, as the reference does.
func usageRefNote(vals []int64, k int, r jsonvalue.Value, isBad *bool) {
	v, ok, b := usageRefValue(r)
	if ok {
		vals[k] = max(vals[k], v)
	}
	*isBad = *isBad || b
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
	data, isBad := "", false
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
			read := false // some path other than a rider's was read
			for k, p := range paths {
				rider := k >= len(paths)-f.riders
				if !rider && !strings.Contains(d, p[strings.LastIndexByte(p, '.')+1:]) || rider && !read || !jsonbound.ValidString(d) {
					continue
				}
				read = read || !rider
				usageRefNote(vals, slot(f.sseSlot, k), jsonvalue.Get(d, p), &isBad)
			}
		}
		data = ""
	}
	if isBad {
		return 0, false
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
		"\xEF\xBB\xBFdata: {\"n\":5}\n\n", "data: {\"a\":\ndata\ndata: {\"n\":2}, \"b\":3}\r\n\r\n: c\n\n", "data: {\"n\":\r\ndata: 1}\r\n\r\n",
		usageAnthropicDownSSE, "data: {\"n\":5}\n\ndata: {\"n\":1e2}\n\ndata: {\"n\":3}\n\n", "data: {\"n\":5}\n\ndata: {\"n\":1.5}\n\n",
		"data: {\"n\":null,\"b\":-0}\n\ndata: {\"a\":{\"n\":\"7\"}}\n\n"} {
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
	for _, s := range []string{usageChatJSON, usageResponsesJSON, usageAnthropicJSON, `{"n":5,"a":{"n":-1},"b":2.0}`,
		usageAnthropicSplitJSON, `{"n":1e308}`, `{"n":1000e-1,"b":null}`, `{"n":1099511627777}`, `{"a":{"n":0.5e1},"b":"2"}`} {
		f.Add([]byte(s), uint8(0), uint16(1<<15), uint64(1))
		f.Add([]byte(s), uint8(3), uint16(20), uint64(2))
		f.Add([]byte(s), uint8(2), uint16(1<<15), uint64(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, which uint8, maxBytes uint16, seed uint64) {
		fields := usageFuzzFields[int(which)%len(usageFuzzFields)]
		vals := make([]int64, fields.slots)
		for k := range vals {
			vals[k] = -1
		}
		isBad := false
		if len(in) <= int(maxBytes) && jsonbound.Valid(in) {
			for i, p := range fields.json {
				usageRefNote(vals, slot(fields.jsonSlot, i), jsonvalue.GetBytes(in, p), &isBad)
			}
		}
		want, wantFound := usageRefSum(fields, vals)
		if isBad {
			want, wantFound = 0, false
		}
		var u Scanner
		for i := range uint64(2) {
			if got, found := usageScan(&u, fields, false, int(maxBytes), usageRandomChunks(in, seed+i)...); got != want || found != wantFound {
				t.Fatalf("fields %v: got %d, %v; the reference %d, %v", fields.json, got, found, want, wantFound)
			}
		}
	})
}
