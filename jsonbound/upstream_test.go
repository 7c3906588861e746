package jsonbound

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf16"
)

// pythonReader reads each line's body (base64) at its path (after a tab)
// as json.loads does, and prints the reading as one JSON line.
const pythonReader = `
import base64, json, sys
for line in sys.stdin:
    b64, path = line.rstrip("\n").split("\t")
    try:
        v = json.loads(base64.b64decode(b64))
    except Exception:
        print('{"accepted":false}')
        continue
    kind, text = None, ""
    for name in path.split("."):
        if isinstance(v, dict) and name in v:
            v = v[name]
        elif isinstance(v, list) and name.isascii() and name.isdigit() and str(int(name)) == name and int(name) < len(v):
            v = v[int(name)]
        else:
            kind = "absent"
            break
    if kind is None:
        if isinstance(v, str):
            kind, text = "str", v
        elif isinstance(v, bool):
            kind, text = "bool", "true" if v else "false"
        elif isinstance(v, (int, float)):
            try:
                kind, text = "num", repr(float(v))
            except OverflowError:
                kind, text = "num", "inf" if v > 0 else "-inf"
        elif v is None:
            kind = "null"
        elif isinstance(v, dict):
            kind = "obj"
        else:
            kind = "arr"
    print(json.dumps({"accepted": True, "kind": kind, "text": text}))
`

// pythonReadings runs python3 once over every case.
func pythonReadings(t *testing.T, cases []bodyCase) []reading {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is missing: the differential test needs it (.ci/deps installs Debian's python3)")
	}
	var in bytes.Buffer
	for _, c := range cases {
		in.WriteString(base64.StdEncoding.EncodeToString(c.body) + "\t" + c.path + "\n")
	}
	cmd := exec.Command(py, "-c", pythonReader)
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var got []reading
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var r struct {
			Accepted   bool
			Kind, Text string
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("python3 printed %q: %v", sc.Text(), err)
		}
		got = append(got, reading{r.Accepted, r.Kind, r.Text})
	}
	if len(got) != len(cases) {
		t.Fatalf("python3 read %d cases of %d", len(got), len(cases))
	}
	return got
}

// TestReadingMatchesUpstreams generates bodies (duplicates at any depth,
// escaped and case-variant keys, BOM, NaN and Infinity, whitespace and
// padding, deep nesting, truncation, UTF-16 and UTF-32, lone surrogates,
// invalid UTF-8) and paths. Whenever the reader returns a reading, Python's
// json.loads and Go's encoding/json, when they accept the body, read the
// same: the same kind (absent included), the same string or boolean, the
// same number (as a float: Python's repr of 1.0 is not what was written).
// Every other case is a refusal with its reason; numbers are compared as
// values only when both are finite.
func TestReadingMatchesUpstreams(t *testing.T) {
	cases := generateBodies(rand.New(rand.NewPCG(29, 1)), 4000)
	py := pythonReadings(t, cases)
	refusals := map[Refusal]int{}
	read := 0
	for k, c := range cases {
		got, why := filterReading(c.body, c.path)
		if why != 0 {
			if why.String() == "readable" {
				t.Fatalf("%q: undocumented refusal %d", c.body, why)
			}
			refusals[why]++
			continue
		}
		read++
		if !py[k].accepted {
			t.Errorf("%q at %q: read %+v; Python refuses the body", c.body, c.path, got)
		}
		if !agrees(got, py[k]) {
			t.Errorf("%q at %q: read %+v; Python reads %+v", c.body, c.path, got, py[k])
		}
		if g := goReading(c.body, c.path); !agrees(got, g) {
			t.Errorf("%q at %q: read %+v; encoding/json reads %+v", c.body, c.path, got, g)
		}
	}
	t.Logf("%d cases: %d read, refused %v", len(cases), read, refusals)
	if read < len(cases)/3 || len(refusals) < 7 {
		t.Fatalf("the generator reads too little (%d of %d) or refuses for too few reasons (%v)", read, len(cases), refusals)
	}
}

type bodyCase struct {
	body []byte
	path string
}

var (
	genKeys = []string{"model", "a", "b", "team", "metadata", "k",
		`mod\u0065l`, `\u0061`, "Model", "MODEL", "TEAM", `\u212a`, "ſ", "s"}
	genPaths = []string{"model", "a", "b", "a.b", "metadata.team", "a.0", "a.1.b", "b.a.model", "k", "s", "a.b.a.b"}
	genWords = []string{`"gpt-4o"`, `"x\"y\\"`, `"\u00e9t\u00c9"`, `"\ud83d\ude00"`, `"\ud800"`, `"\udc00x"`, `"é"`,
		`0`, `-0`, `1.5e3`, `12345678901234567890`, `1E-2`, `NaN`, `Infinity`, `-Infinity`, `true`, `false`, `null`, `""`}
)

// generateBodies makes n bodies and a path for each.
func generateBodies(rnd *rand.Rand, n int) []bodyCase {
	cases := make([]bodyCase, 0, n)
	for range n {
		var b strings.Builder
		genValue(rnd, &b, 0)
		body := []byte(b.String())
		switch rnd.IntN(16) {
		case 0:
			body = append([]byte("\xef\xbb\xbf"), body...)
		case 1:
			body = body[:rnd.IntN(len(body)+1)]
		case 2:
			body = wideBody(body, rnd.IntN(4))
		case 3:
			body = bytes.Replace(body, []byte("é"), []byte{0xe9}, 1) // Latin-1
		case 4:
			body = append(append(bytes.Repeat([]byte("["), 60+rnd.IntN(8)), body...), bytes.Repeat([]byte("]"), 60+rnd.IntN(8))...)
		case 5:
			body = append(body, bytes.Repeat([]byte(" \n\t\r"), rnd.IntN(200))...)
		}
		cases = append(cases, bodyCase{body, genPaths[rnd.IntN(len(genPaths))]})
	}
	return cases
}

// genValue writes a random value, objects more often near the top.
func genValue(rnd *rand.Rand, b *strings.Builder, depth int) {
	space := func() {
		if rnd.IntN(4) == 0 {
			b.WriteString(" \n\t\r"[:rnd.IntN(5)])
		}
	}
	space()
	switch r := rnd.IntN(10); {
	case depth < 4 && r < 6:
		b.WriteByte('{')
		for m := range rnd.IntN(5) {
			if m > 0 {
				b.WriteByte(',')
			}
			space()
			b.WriteString(`"` + genKeys[rnd.IntN(len(genKeys))] + `"`)
			space()
			b.WriteByte(':')
			genValue(rnd, b, depth+1)
		}
		space()
		b.WriteByte('}')
	case depth < 4 && r < 8:
		b.WriteByte('[')
		for m := range rnd.IntN(4) {
			if m > 0 {
				b.WriteByte(',')
			}
			genValue(rnd, b, depth+1)
		}
		b.WriteByte(']')
	default:
		b.WriteString(genWords[rnd.IntN(len(genWords))])
	}
	space()
}

// wideBody encodes a UTF-8 body as UTF-16 LE or BE, or UTF-32 LE or BE.
func wideBody(body []byte, enc int) []byte {
	var out []byte
	for _, r := range string(body) {
		if enc < 2 {
			for _, u := range utf16.Encode([]rune{r}) {
				if enc == 0 {
					out = binary.LittleEndian.AppendUint16(out, u)
				} else {
					out = binary.BigEndian.AppendUint16(out, u)
				}
			}
		} else if enc == 2 {
			out = binary.LittleEndian.AppendUint32(out, uint32(r))
		} else {
			out = binary.BigEndian.AppendUint32(out, uint32(r))
		}
	}
	return out
}

// A few readings by hand: what each rule of body.go gives.
func TestReadingRules(t *testing.T) {
	for _, c := range []struct {
		body, path string
		want       reading
		why        Refusal
	}{
		{`{"model":"decoy","model":"gpt-4o"}`, "model", reading{true, "str", "gpt-4o"}, 0},
		{`{"mod\u0065l":"x","model":"y","mod\u0065l":"z"}`, "model", reading{true, "str", "z"}, 0},
		{"\xef\xbb\xbf{\"model\":\"gpt-4o\"}", "model", reading{true, "str", "gpt-4o"}, 0},
		{`{"x":NaN,"y":-Infinity,"model":"gpt-4o"}`, "model", reading{true, "str", "gpt-4o"}, 0},
		{`{"n":Infinity}`, "n", reading{true, "num", "Infinity"}, 0},
		{`{"a":[{"b":1},{"b":"two","b":"three"}]}`, "a.1.b", reading{true, "str", "three"}, 0},
		{`{"metadata":{"team":"a"},"metadata":{"x":1}}`, "metadata.team", reading{}, RefuseDuplicateParent},
		{`{"model":"a","MODEL":"b"}`, "model", reading{}, RefuseCaseVariant},
		{"{\"\\u212a\":1}", "k", reading{}, RefuseCaseVariant},
		{`{"model":"a"} `, "model.x", reading{true, "absent", ""}, 0},
		{`{"\ud83d\ude00\u00e9\n":1}`, "😀é\n", reading{true, "num", "1"}, 0},
		{string(wideBody([]byte(`{"model":"a"}`), 0)), "model", reading{}, RefuseEncoding},
		{"\xff\xfe{", "model", reading{}, RefuseEncoding},
		{`{"model":"\ud800"}`, "model", reading{}, RefuseSurrogate},
		{"{\"model\":\"\xe9\"}", "model", reading{}, RefuseUTF8},
		{`{"model":"a"`, "model", reading{}, RefuseSyntax},
		{strings.Repeat("[", 65) + strings.Repeat("]", 65), "model", reading{}, RefuseTooDeep},
	} {
		got, why := filterReading([]byte(c.body), c.path)
		if why != c.why || got != c.want {
			t.Errorf("%q at %s: %+v, %v; want %+v, %v", c.body, c.path, got, why, c.want, c.why)
		}
	}
}
