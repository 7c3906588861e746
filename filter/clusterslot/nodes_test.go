package clusterslot

import (
	"os"
	"strings"
	"testing"
)

func readNodes(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/nodes/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// owners checks m against want, a list of (first slot, last slot, owner)
// covering every slot in order.
func owners(t *testing.T, m *Map, want ...[3]int) {
	t.Helper()
	next := 0
	for _, w := range want {
		if w[0] != next {
			t.Fatalf("want list: range at %d, expected %d", w[0], next)
		}
		for s := w[0]; s <= w[1]; s++ {
			if int(m[s]) != w[2] {
				t.Fatalf("slot %d: owner %d, want %d (range %v)", s, m[s], w[2], w)
			}
		}
		next = w[1] + 1
	}
	if next != Slots {
		t.Fatalf("want list ends at %d", next)
	}
}

const (
	unknown  = int(Unknown)
	unlisted = int(Unlisted)
)

func TestParseNodesReal(t *testing.T) {
	addrs := []string{"127.0.0.1:42487", "127.0.0.1:43927", "127.0.0.1:41557"}
	var m Map
	for _, f := range []string{"real-3-masters.txt", "real-migrating.txt", "real-importing.txt"} {
		u, err := ParseNodes(&m, readNodes(t, f), addrs)
		if err != nil || u != "" {
			t.Fatalf("%s: %q %v", f, u, err)
		}
		// Slot 93 migrates from node 0 to node 2: node 0 owns it until the handover.
		owners(t, &m, [3]int{0, 5460, 0}, [3]int{5461, 10921, 1}, [3]int{10922, 16383, 2})
	}
	u, err := ParseNodes(&m, readNodes(t, "real-3-masters.txt"), addrs[:2])
	if err != nil || u != "127.0.0.1:41557" {
		t.Fatalf("without node 2: %q %v", u, err)
	}
	owners(t, &m, [3]int{0, 5460, 0}, [3]int{5461, 10921, 1}, [3]int{10922, 16383, unlisted})
}

// A real node after slot 93's handover, still flagged migrating.
func TestParseNodesAfterHandover(t *testing.T) {
	var m Map
	u, err := ParseNodes(&m, readNodes(t, "real-hostnames-after-handover.txt"), []string{"node-0.test:42881", "node-1.test:36611", "node-2.test:42721"})
	if err != nil || u != "" {
		t.Fatalf("%q %v", u, err)
	}
	owners(t, &m, [3]int{0, 92, 0}, [3]int{93, 93, 2}, [3]int{94, 5460, 0}, [3]int{5461, 10921, 1}, [3]int{10922, 16383, 2})
}

func TestParseNodesHostnames(t *testing.T) {
	text := readNodes(t, "hostnames.txt")
	var m Map
	for _, addrs := range [][]string{
		{"node-a.test:17001", "node-b.test:17002", "node-c.test:17003", "node-d.test:17004"},
		{"127.0.0.1:17001", "127.0.0.1:17002"}, // ip:port matches too
	} {
		u, err := ParseNodes(&m, text, addrs)
		if err != nil || u != "" {
			t.Fatalf("%v: %q %v", addrs, u, err)
		}
		owners(t, &m, [3]int{0, 8191, 0}, [3]int{8192, 16383, 1})
	}
	u, err := ParseNodes(&m, text, []string{"node-a.test:17001", "node-b.test:17001", "node-b.test"})
	if err != nil || u != "node-b.test:17002" {
		t.Fatalf("node-b unlisted: %q %v", u, err)
	}
	owners(t, &m, [3]int{0, 8191, 0}, [3]int{8192, 16383, unlisted})
}

func TestParseNodesFlags(t *testing.T) {
	var m Map
	u, err := ParseNodes(&m, readNodes(t, "flags.txt"), []string{"redis-0.redis:6379", "10.0.0.2:6379", "10.0.0.3:6379", "10.0.0.6:6379", "10.0.0.5:6379"})
	if err != nil || u != "::1:6390" {
		t.Fatalf("%q %v", u, err)
	}
	owners(t, &m,
		[3]int{0, 0, 0}, [3]int{1, 1, unknown}, [3]int{2, 2, 0}, [3]int{3, 3, unknown}, [3]int{4, 100, 0},
		[3]int{101, 200, unknown}, // fail
		[3]int{201, 300, 2},       // fail? is kept
		[3]int{301, 400, unknown}, // noaddr
		[3]int{401, 500, 3},       // migrating and importing annotations ignored
		[3]int{501, 16382, unknown},
		[3]int{16383, 16383, unlisted})
}

func TestParseNodesResets(t *testing.T) {
	var m Map
	for i := range m {
		m[i] = 9
	}
	if _, err := ParseNodes(&m, "a 1.2.3.4:5@6 master - 0 0 1 connected 7\n", nil); err != nil {
		t.Fatal(err)
	}
	owners(t, &m, [3]int{0, 6, unknown}, [3]int{7, 7, unlisted}, [3]int{8, Slots - 1, unknown})
}

func TestParseNodesErrors(t *testing.T) {
	line := "a 1.2.3.4:5@6 master - 0 0 1 connected "
	many := make([]string, 256)
	for i := range many {
		many[i] = "h:1"
	}
	for _, c := range []struct {
		text  string
		addrs []string
		err   string
	}{
		{"", nil, "empty CLUSTER NODES reply"},
		{"\n\r\n", nil, "empty CLUSTER NODES reply"},
		{strings.Repeat(" ", maxText+1), nil, "longer than 1 MiB"},
		{strings.Repeat("a b slave c 0 0 1 connected\n", maxLines+1), nil, "more than 1000 lines"},
		{line + "1", many, "more than 254 node addresses"},
		{"a 1.2.3.4:5@6 master - 0 0 1", nil, "line 1: fewer than 8 fields"},
		{" 1.2.3.4:5@6 master - 0 0 1 connected", nil, "line 1: no node id"},
		{"a 1.2.3.4@6 master - 0 0 1 connected 1", nil, "line 1: bad address"},
		{"a 1.2.3.4:0@6 master - 0 0 1 connected 1", nil, "line 1: bad address"},
		{"a 1.2.3.4:65536@6 master - 0 0 1 connected 1", nil, "line 1: bad address"},
		{line + "16384", nil, "line 1: bad slot token"},
		{line + "5-3", nil, "line 1: bad slot token"},
		{line + "5-", nil, "line 1: bad slot token"},
		{line + "-5", nil, "line 1: bad slot token"},
		{line + "x", nil, "line 1: bad slot token"},
		{line + "+5", nil, "line 1: bad slot token"},
		{line + "000001", nil, "line 1: bad slot token"},
		{line + "[93->-b", nil, "line 1: bad slot token"},
		{"b c slave d 0 0 1 connected\n" + line + "1 x", nil, "line 2: bad slot token"},
		{line + strings.Repeat("1 ", maxTokens+1), nil, "line 1: more than 16384 slot tokens"},
		{line + "0-16383 0-16383 0", nil, "line 1: more than 32768 slots in all"},
	} {
		var m Map
		_, err := ParseNodes(&m, c.text, c.addrs)
		if err == nil || !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), "clusterslot: ") {
			t.Errorf("%.60q: got %v, want %q", c.text, err, c.err)
		}
	}
	// A skipped master's slot tokens are checked, not written.
	var m Map
	if _, err := ParseNodes(&m, "a 1.2.3.4:5@6 master,fail - 0 0 1 connected 0-16383 0-16383 0-16383\n", nil); err != nil {
		t.Errorf("failed master's slots: %v", err)
	}
	if _, err := ParseNodes(&m, "a 1.2.3.4:5@6 master,fail - 0 0 1 connected x\n", nil); err == nil {
		t.Error("failed master's bad token accepted")
	}
}

// A cluster of one master that never met another node prints its own
// line with no IP (Redis 7.0.15, CLUSTER ADDSLOTSRANGE 0 16383 on a fresh
// node): the node that gave the text owns it, when the ports agree.
func TestParseNodesMyselfWithoutIP(t *testing.T) {
	const text = "1ca44738fcb75c872d3dea4a4e399a97e1ccb35b :7391@17391 myself,master - 0 0 0 connected 0-16383\n"
	var m Map
	for _, c := range []struct {
		addrs []string
		self  int
		owner int
		u     string
	}{
		{[]string{"10.0.0.9:7391"}, 0, 0, ""},
		{[]string{"redis-0:6379", "10.0.0.9:7391"}, 1, 1, ""},
		{[]string{"10.0.0.9:7391"}, -1, unlisted, ":7391"}, // no node named
		{[]string{"10.0.0.9:6379"}, 0, unlisted, ":7391"},  // another port
		{[]string{"10.0.0.9:17391"}, 0, unlisted, ":7391"}, // only a suffix of the port
	} {
		u, err := ParseNodesFrom(&m, text, c.addrs, c.self)
		if err != nil || u != c.u {
			t.Fatalf("%v self %d: %q %v", c.addrs, c.self, u, err)
		}
		owners(t, &m, [3]int{0, 16383, c.owner})
	}
	// Only the line flagged myself: another master with no IP stays unlisted.
	u, err := ParseNodesFrom(&m, "a :7391@17391 master - 0 0 0 connected 0-16383\n", []string{"10.0.0.9:7391"}, 0)
	if err != nil || u != ":7391" {
		t.Fatalf("not myself: %q %v", u, err)
	}
}
