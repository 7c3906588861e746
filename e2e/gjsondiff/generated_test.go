package gjsondiff

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// genKeys are the names generated documents use, escapes, dots and
// gjson's operators (literal in a claim's escaped path) among
// them, so that paths built from them find something.
var genKeys = []string{"a", "b", "usage", "total_tokens", "0", "1", "a.b", `q"t`, `b\s`, "é", `\u0061`, "", " a", "#", "a*", "@", "x|y", "!"}

// genValue writes a random JSON value, at most depth deep, as an upstream
// might: spaces, duplicate keys, escapes, numbers of every form.
func genValue(r *rand.Rand, b *strings.Builder, depth int) {
	ws := func() {
		if r.IntN(4) == 0 {
			b.WriteString([]string{" ", "\n", "\t ", "\r\n  "}[r.IntN(4)])
		}
	}
	ws()
	switch k := r.IntN(10); {
	case k < 2 && depth > 0:
		b.WriteByte('{')
		for i, n := 0, r.IntN(5); i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			ws()
			b.WriteString(strconv.Quote(genKeys[r.IntN(len(genKeys))]))
			ws()
			b.WriteByte(':')
			genValue(r, b, depth-1)
		}
		ws()
		b.WriteByte('}')
	case k < 4 && depth > 0:
		b.WriteByte('[')
		for i, n := 0, r.IntN(4); i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			genValue(r, b, depth-1)
		}
		ws()
		b.WriteByte(']')
	case k < 6:
		b.WriteString([]string{"0", "-0", "12", "-7", "1.5", "1e3", "-2.5E-3", "9007199254740993", "-9007199254740993",
			"18446744073709551617", "1e400", "123456789012345678901234567890", "0.1", "4e-400"}[r.IntN(14)])
	case k < 8:
		b.WriteString([]string{`"x"`, `""`, `"42"`, `"-3"`, `"TRUE"`, `"1.5"`, `"a\"b"`, `"\u00e9\ud83d\ude00"`, `"\ud800"`,
			`"\ud800\u0041"`, `"tab\tnl\n"`, `"\\"`, `"{[\"a\":1]}"`}[r.IntN(13)])
	default:
		b.WriteString([]string{"true", "false", "null"}[r.IntN(3)])
	}
	ws()
}

// genPath is 1 to 4 names of genKeys or small indexes, escaped at random.
func genPath(r *rand.Rand) string {
	names := make([]string, 1+r.IntN(4))
	for i := range names {
		n := genKeys[r.IntN(len(genKeys))]
		if r.IntN(3) == 0 {
			n = strconv.Itoa(r.IntN(3))
		}
		if r.IntN(2) == 0 || strings.ContainsAny(n, `.\`) && r.IntN(4) > 0 {
			n = escapeLikeGjson(n)
		}
		names[i] = n
	}
	return strings.Join(names, ".")
}

// TestAgainstGjsonGenerated compares the readers on valid documents built
// to hold the paths asked for.
func TestAgainstGjsonGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 1))
	for range 30000 {
		var b strings.Builder
		genValue(r, &b, 4)
		doc := b.String()
		for range 4 {
			compare(t, doc, genPath(r))
		}
	}
}

// TestAgainstGjsonMutated compares the readers on generated documents cut,
// changed and spliced with JSON's bytes and long runs of '\' and '"', as
// an upstream's truncated or hostile reply might be.
func TestAgainstGjsonMutated(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	const bytesIn = "\"\\{}[](),:. nu01-+eEiIN\x00\x1fa\xff"
	for range 50000 {
		var b strings.Builder
		genValue(r, &b, 4)
		doc := []byte(b.String())
		for range 1 + r.IntN(3) {
			if len(doc) == 0 {
				break
			}
			i := r.IntN(len(doc))
			switch r.IntN(5) {
			case 0:
				doc = doc[:i]
			case 1:
				doc[i] = bytesIn[r.IntN(len(bytesIn))]
			case 2:
				doc = slices.Insert(doc, i, bytesIn[r.IntN(len(bytesIn))])
			case 3:
				doc = slices.Delete(doc, i, i+1)
			case 4:
				run := make([]byte, r.IntN(100))
				for j := range run {
					run[j] = `\\\"x{`[r.IntN(5)]
				}
				doc = slices.Insert(doc, i, run...)
			}
		}
		compare(t, string(doc), genPath(r))
	}
}
