package wasmhost

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

func TestKeySlot(t *testing.T) {
	if got := crc16([]byte("123456789")); got != 0x31C3 {
		t.Errorf("crc16(123456789) = %#x, want 0x31c3 (CRC-16/XMODEM check value)", got)
	}
	for _, tc := range []struct {
		key  string
		want uint16
	}{
		{"foo", 12182},
		{"bar", 5061},
		{"123456789", 12739},
		{"", 0},
		{"{foo}", 12182},
		{"{foo}bar", 12182},
	} {
		if got := keySlot([]byte(tc.key)); got != tc.want {
			t.Errorf("keySlot(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
	// The hash tag rules: each key hashes as the second string.
	for _, pair := range [][2]string{
		{"{user1000}.following", "user1000"},
		{"{user1000}.followers", "user1000"},
		{"foo{{bar}}zap", "{bar"},         // from the first '{' to the next '}'
		{"foo{bar}{zap}", "bar"},          // only the first tag counts
		{"foo{}{bar}", "foo{}{bar}"},      // an empty first tag: the whole key
		{"{}", "{}"},                      // the same
		{"a}b{c", "a}b{c"},                // no '}' after the '{': the whole key
		{"rl:{api|a%7Bb}:0", "api|a%7Bb"}, // the filter's key layout
		{"rl:{api|a}b}:block", "api|a"},   // (parts never hold '}')
		{"\xff{\x00}", "\x00"},            // bytes, not runes
	} {
		if got, want := keySlot([]byte(pair[0])), crc16([]byte(pair[1]))%16384; got != want {
			t.Errorf("keySlot(%q) = %d, want %d (the slot of %q)", pair[0], got, want, pair[1])
		}
	}
}

// TestKeySlotMatchesRedis compares keySlot with CLUSTER KEYSLOT of a real
// cluster node on a few thousand random keys, braces included.
func TestKeySlotMatchesRedis(t *testing.T) {
	t.Parallel()
	node := redistest.StartCluster(t, 1).Nodes[0].Client
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "ab{}|:x-é\x00"
	keys := make([]string, 3000)
	for i := range keys {
		b := make([]byte, rng.IntN(12))
		for j := range b {
			b[j] = alphabet[rng.IntN(len(alphabet))]
		}
		keys[i] = string(b)
	}
	// One pipelined CLUSTER KEYSLOT per key, replies in order.
	var pipeline []byte
	for _, k := range keys {
		pipeline = redistest.AppendArgs(pipeline, "CLUSTER", "KEYSLOT", k)
	}
	err := node.With(func(c *redistest.Conn) error {
		reply, err := c.RoundTrip(pipeline)
		for i, k := range keys {
			if i > 0 {
				reply, err = c.Next()
			}
			v, err := c.Decode(reply, err)
			if err != nil {
				return err
			}
			if int64(keySlot([]byte(k))) != v.Int {
				t.Fatalf("keySlot(%q) = %d, CLUSTER KEYSLOT says %d", k, keySlot([]byte(k)), v.Int)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRoutingKey(t *testing.T) {
	for _, tc := range []struct {
		cmd  string // arguments separated by spaces
		want string // "" for no key
	}{
		{"EVALSHA abc 2 k1 k2 a1", "k1"},
		{"evalsha abc 1 k1", "k1"},
		{"EVAL script 0 a1 a2", ""},
		{"EVAL script x k1", ""},
		{"EVAL script 1", ""},
		{"FCALL_RO f 1 k", "k"},
		{"GET k", "k"},
		{"set k v", "k"},
		{"PING", ""},
		{"PING hello", ""},
		{"SCRIPT LOAD body", ""},
		{"CLUSTER SLOTS", ""},
		{"GET", ""},
	} {
		key, ok := routingKey(splitArgs(tc.cmd))
		if string(key) != tc.want || ok != (tc.want != "") {
			t.Errorf("routingKey(%q) = %q, %v; want %q", tc.cmd, key, ok, tc.want)
		}
	}
}

func splitArgs(cmd string) [][]byte {
	var args [][]byte
	for _, f := range strings.Fields(cmd) {
		args = append(args, []byte(f))
	}
	return args
}

func TestRespArgs(t *testing.T) {
	args, err := respArgs(respCommand("EVALSHA", "sha", "1", "", "a\r\nb"))
	if err != nil || !reflect.DeepEqual(args, [][]byte{[]byte("EVALSHA"), []byte("sha"), []byte("1"), {}, []byte("a\r\nb")}) {
		t.Errorf("respArgs = %q, %v", args, err)
	}
	for _, bad := range []string{
		"", "*0\r\n", "*1\r\n:1\r\n", "*1\r\n$-1\r\n", "*1\r\n*0\r\n", "+PING\r\n",
		"*1\r\n$4\r\nPING\r\n+extra\r\n", "*2\r\n$4\r\nPING\r\n", "*1\r\n$4\r\nPINGxx\r\n",
	} {
		if args, err := respArgs([]byte(bad)); err == nil {
			t.Errorf("respArgs(%q) = %q, want an error", bad, args)
		}
	}
}

func TestParseClusterSlots(t *testing.T) {
	node := func(ip string, port int) string {
		return fmt.Sprintf("*3\r\n$%d\r\n%s\r\n:%d\r\n$2\r\nid\r\n", len(ip), ip, port)
	}
	// Out of order, an empty ip (the answering node's host), a replica.
	reply := "*2\r\n" +
		"*4\r\n:8000\r\n:16383\r\n" + node("", 7002) + node("10.0.0.9", 7102) +
		"*3\r\n:0\r\n:7999\r\n" + node("10.0.0.1", 7001)
	got, _, err := parseClusterSlots([]byte(reply), "10.0.0.2:7002")
	want := []slotRange{{0, 7999, "10.0.0.1:7001"}, {8000, 16383, "10.0.0.2:7002"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("parseClusterSlots = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{
		"-ERR This instance has cluster support disabled\r\n",
		"*0\r\n",
		"*1\r\n*3\r\n:0\r\n:16384\r\n" + node("10.0.0.1", 7001),
		"*1\r\n*3\r\n:9\r\n:8\r\n" + node("10.0.0.1", 7001),
		"*1\r\n*3\r\n:0\r\n:1\r\n" + node("?", 7001),
		"*1\r\n*2\r\n:0\r\n:1\r\n",
		":1\r\n",
	} {
		if got, _, err := parseClusterSlots([]byte(bad), "10.0.0.2:7002"); err == nil {
			t.Errorf("parseClusterSlots(%q) = %v, want an error", bad, got)
		}
	}
}

func TestParseRedirection(t *testing.T) {
	for _, tc := range []struct {
		reply string
		want  redirection
		ok    bool
	}{
		{"-MOVED 3999 127.0.0.1:6381\r\n", redirection{false, "127.0.0.1:6381"}, true},
		{"-ASK 3999 127.0.0.1:6381\r\n", redirection{true, "127.0.0.1:6381"}, true},
		{"-MOVED 3999 :6381\r\n", redirection{false, "10.1.1.1:6381"}, true},
		{"-MOVED 3999 [::1]:6381\r\n", redirection{false, "[::1]:6381"}, true},
		{"-MOVED 3999\r\n", redirection{}, false},
		{"-CROSSSLOT Keys in request don't hash to the same slot\r\n", redirection{}, false},
		{"+MOVED 1 a:1\r\n", redirection{}, false},
	} {
		got, ok := parseRedirection([]byte(tc.reply), "10.1.1.1:7000")
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("parseRedirection(%q) = %+v, %v; want %+v, %v", tc.reply, got, ok, tc.want, tc.ok)
		}
	}
}
