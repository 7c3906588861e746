package wasmhost

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRespFrameLen(t *testing.T) {
	bulk := strings.Repeat("x", 5000)
	const whole = -1
	for _, tc := range []struct {
		name string
		in   string
		want int // length of the first reply (whole: all of in); 0 with an error
		err  error
	}{
		{"simple string", "+OK\r\n", whole, nil},
		{"error", "-NOSCRIPT No matching script. Please use EVAL.\r\n", whole, nil},
		{"integer", ":-42\r\n", whole, nil},
		{"bulk", "$5\r\nhello\r\n", whole, nil},
		{"empty bulk", "$0\r\n\r\n", whole, nil},
		{"bulk with CRLF inside", "$4\r\na\r\nb\r\n", whole, nil},
		{"large bulk", "$5000\r\n" + bulk + "\r\n", whole, nil},
		{"null bulk", "$-1\r\n", whole, nil},
		{"null array", "*-1\r\n", whole, nil},
		{"empty array", "*0\r\n", whole, nil},
		{"array", "*2\r\n$1\r\na\r\n:1\r\n", whole, nil},
		{"nested", "*3\r\n:1\r\n*2\r\n+a\r\n*1\r\n-ERR x\r\n$1\r\nb\r\n", whole, nil},
		{"cell reply", "*5\r\n:0\r\n:16\r\n:15\r\n:-1\r\n:2\r\n", whole, nil},
		{"followed by another reply", "+OK\r\n+OK\r\n", 5, nil},
		{"array followed by another reply", "*1\r\n:1\r\n+OK\r\n", 8, nil},
		{"resp3 null", "_\r\n", whole, nil},
		{"resp3 bool", "#t\r\n", whole, nil},
		{"resp3 double", ",3.14\r\n", whole, nil},
		{"resp3 map", "%1\r\n+k\r\n:1\r\n", whole, nil},
		{"resp3 set", "~2\r\n:1\r\n:2\r\n", whole, nil},
		{"resp3 verbatim", "=8\r\ntxt:abcd\r\n", whole, nil},
		{"resp3 attribute then reply", "|1\r\n+ttl\r\n:3\r\n:7\r\n", whole, nil},

		{"empty", "", 0, errIncomplete},
		{"type byte only", "+", 0, errIncomplete},
		{"no CRLF yet", "+OK", 0, errIncomplete},
		{"CR only", "+OK\r", 0, errIncomplete},
		{"bulk header only", "$5\r\n", 0, errIncomplete},
		{"bulk short", "$5\r\nhel", 0, errIncomplete},
		{"bulk without final CRLF", "$5\r\nhello", 0, errIncomplete},
		{"array missing elements", "*3\r\n:1\r\n:2\r\n", 0, errIncomplete},
		{"nested incomplete", "*2\r\n*2\r\n:1\r\n", 0, errIncomplete},
		{"map missing value", "%1\r\n+k\r\n", 0, errIncomplete},
		{"attribute without reply", "|1\r\n+k\r\n:1\r\n", 0, errIncomplete},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == whole {
				tc.want = len(tc.in)
			}
			n, err := respFrameLen([]byte(tc.in))
			if !errors.Is(err, tc.err) && !(tc.err == nil && err == nil) {
				t.Fatalf("respFrameLen(%q) error = %v, want %v", tc.in, err, tc.err)
			}
			if n != tc.want {
				t.Fatalf("respFrameLen(%q) = %d, want %d", tc.in, n, tc.want)
			}
		})
	}
}

func TestRespFrameLenRejectsMalformed(t *testing.T) {
	for _, in := range []string{
		"?what\r\n",          // unknown type
		"+OK\n",              // LF without CR
		":12a\r\n",           // bad integer
		"$abc\r\n",           // bad length
		"$-2\r\n",            // negative length
		"$3\r\nabcde\r\n",    // payload longer than declared
		"*-2\r\n",            // negative count
		"%-1\r\n",            // null map
		"#x\r\n",             // bad boolean
		"_x\r\n",             // bad null
		"*1\r\n$1\r\nab\r\n", // nested payload error
		"+" + strings.Repeat("a", respMaxLine+1),
		strings.Repeat("*1\r\n", respMaxDepth+2) + ":1\r\n",
	} {
		if n, err := respFrameLen([]byte(in)); err == nil || errors.Is(err, errIncomplete) {
			short := in
			if len(short) > 40 {
				short = short[:40] + "..."
			}
			t.Errorf("respFrameLen(%q) = %d, %v; want a protocol error", short, n, err)
		}
	}
}

// Every proper prefix of a valid reply is incomplete, never an error and
// never a shorter reply.
func TestRespFrameLenPrefixes(t *testing.T) {
	reply := "*3\r\n$3\r\nabc\r\n*2\r\n:1\r\n-ERR e\r\n%1\r\n+k\r\n_\r\n"
	for i := 0; i < len(reply); i++ {
		if n, err := respFrameLen([]byte(reply[:i])); !errors.Is(err, errIncomplete) {
			t.Fatalf("prefix %q: %d, %v; want errIncomplete", reply[:i], n, err)
		}
	}
	if n, err := respFrameLen([]byte(reply)); err != nil || n != len(reply) {
		t.Fatalf("whole reply: %d, %v", n, err)
	}
}

func TestRespCommand(t *testing.T) {
	got := string(respCommand("AUTH", "user", ""))
	if want := "*3\r\n$4\r\nAUTH\r\n$4\r\nuser\r\n$0\r\n\r\n"; got != want {
		t.Errorf("respCommand = %q, want %q", got, want)
	}
}

// Options are read as Higress reads them: the name before "?", db as
// written (SELECT gets it verbatim), the buffer options by std::stoul
// (leading digits, else the default).
func TestParseRedisCluster(t *testing.T) {
	for _, tc := range []struct {
		in, name, db string
		flush        time.Duration
		maxBuf       int
	}{
		{"redis", "redis", "", 3 * time.Millisecond, 1024},
		{"outbound|6379||redis.static?db=2&buffer_flush_timeout=0", "outbound|6379||redis.static", "2", 0, 1024},
		{"r?max_buffer_size_before_flush=0&buffer_flush_timeout=7ms", "r", "", 7 * time.Millisecond, 0},
		{"r?db=x&buffer_flush_timeout=x&max_buffer_size_before_flush=-1", "r", "x", 3 * time.Millisecond, 1024},
		{"r?buffer_flush_timeout=1&buffer_flush_timeout=9", "r", "", time.Millisecond, 1024},
	} {
		name, cfg := parseRedisCluster(tc.in)
		if name != tc.name || cfg.params["db"] != tc.db || cfg.flushTimeout != tc.flush || cfg.maxBuffer != tc.maxBuf {
			t.Errorf("parseRedisCluster(%q) = %q, %+v", tc.in, name, cfg)
		}
	}
}

func TestPairsRoundTrip(t *testing.T) {
	pairs := [][2]string{{":status", "200"}, {"", ""}, {"k", "v\x00with nul"}}
	got, err := decodePairs(encodePairs(pairs))
	if err != nil || len(got) != len(pairs) {
		t.Fatalf("decodePairs: %v, %v", got, err)
	}
	for i := range pairs {
		if got[i] != pairs[i] {
			t.Errorf("pair %d = %q, want %q", i, got[i], pairs[i])
		}
	}
	enc := encodePairs(pairs)
	for _, bad := range [][]byte{enc[:3], enc[:len(enc)-1], {0xff, 0xff, 0xff, 0x7f}} {
		if _, err := decodePairs(bad); err == nil {
			t.Errorf("decodePairs(%q) accepted malformed input", bad)
		}
	}
}

func TestHeaderMap(t *testing.T) {
	m := newHeaderMap([][2]string{{"A", "1"}, {"b", "2"}, {"a", "3"}})
	if v, ok := m.get("a"); !ok || v != "1" {
		t.Errorf("get returns %q, want the first value", v)
	}
	m.replace("A", "x")
	if len(m.pairs) != 2 || m.pairs[0] != [2]string{"a", "x"} {
		t.Errorf("replace: %q", m.pairs)
	}
	m.replace("new", "n")
	m.add("B", "4")
	m.remove("b")
	want := [][2]string{{"a", "x"}, {"new", "n"}}
	if len(m.pairs) != len(want) || m.pairs[0] != want[0] || m.pairs[1] != want[1] {
		t.Errorf("pairs %q, want %q", m.pairs, want)
	}
}
