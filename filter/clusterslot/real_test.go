package clusterslot

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// One real cluster: Slot agrees with CLUSTER KEYSLOT, and ParseNodes reads
// each node's CLUSTER NODES, before and during a slot's migration.
func TestRealCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	t.Run("KeySlot", func(t *testing.T) { keySlots(t, c.Nodes[0].Addr) })
	t.Run("Nodes", func(t *testing.T) { clusterNodes(t, c) })
	t.Run("Hostnames", func(t *testing.T) { hostnames(t, c) })
}

// hostnames: with cluster-announce-hostname and endpoint type hostname,
// CLUSTER NODES and -MOVED name node-<i>.test, which ParseNodes and
// ParseError read.
func hostnames(t *testing.T, c *redistest.Cluster) {
	var addrs []string
	for i, s := range c.Nodes {
		host := "node-" + strconv.Itoa(i) + ".test"
		for _, kv := range [][2]string{{"cluster-announce-hostname", host}, {"cluster-preferred-endpoint-type", "hostname"}} {
			if _, err := s.Do("CONFIG", "SET", kv[0], kv[1]); err != nil {
				t.Fatal(err)
			}
		}
		addrs = append(addrs, host+s.Addr[strings.LastIndexByte(s.Addr, ':'):])
	}
	// Each node learns the others' hostnames by gossip: wait for node 0's
	// view (a deadline against a hang only).
	var text string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if text, err = c.Nodes[0].Client.Text("CLUSTER", "NODES"); err != nil {
			t.Fatal(err)
		}
		if strings.Count(text, ".test ") == len(c.Nodes) || time.Now().After(deadline) {
			break
		}
	}
	var m Map
	if u, err := ParseNodes(&m, text, addrs); err != nil || u != "" {
		t.Fatalf("%q %v\n%s", u, err, text)
	}
	// Slot 93 moved to node 2 in clusterNodes.
	owners(t, &m, [3]int{0, 92, 0}, [3]int{93, 93, 2}, [3]int{94, 5460, 0}, [3]int{5461, 10921, 1}, [3]int{10922, 16383, 2})
	// "foo" (slot 12182) lives on node 2: node 0 answers -MOVED naming node 2's hostname.
	_, err := c.Nodes[0].Do("GET", "foo")
	if err == nil {
		t.Fatal("GET foo on node 0: no redirection")
	}
	k, slot, addr := ParseError(err.Error())
	if k != Moved || slot != Slot("foo") || addr != addrs[2] {
		t.Fatalf("%q: %v %d %q, want MOVED %d %q", err, k, slot, addr, Slot("foo"), addrs[2])
	}
}

// keySlots compares Slot with CLUSTER KEYSLOT for 10,000 random keys, many
// with braces, pipelined in batches of 1000.
func keySlots(t *testing.T, addr string) {
	conn, err := redistest.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rng := rand.New(rand.NewPCG(32, 1))
	const alphabet = "ab{}{}x|:\x00\xff"
	keys := make([]string, 1000)
	var cmd []byte
	for batch := 0; batch < 10; batch++ {
		cmd = cmd[:0]
		for i := range keys {
			b := make([]byte, rng.IntN(16))
			for j := range b {
				if rng.IntN(4) == 0 {
					b[j] = byte(rng.IntN(256))
				} else {
					b[j] = alphabet[rng.IntN(len(alphabet))]
				}
			}
			keys[i] = string(b)
			cmd = redistest.AppendArgs(cmd, "CLUSTER", "KEYSLOT", keys[i])
		}
		reply, err := conn.RoundTrip(cmd)
		for i, key := range keys {
			if i > 0 {
				reply, err = conn.Next()
			}
			if err != nil {
				t.Fatal(err)
			}
			want, perr := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(string(reply), ":")))
			if perr != nil {
				t.Fatalf("CLUSTER KEYSLOT %q: %q", key, reply)
			}
			if got := Slot(key); int(got) != want {
				t.Errorf("Slot(%q) = %d, CLUSTER KEYSLOT %d", key, got, want)
			}
		}
	}
}

func clusterNodes(t *testing.T, c *redistest.Cluster) {
	addrs := c.Addrs()
	// Node i serves i*16384/3 to (i+1)*16384/3-1 (redistest.StartCluster).
	want := [][3]int{{0, 5460, 0}, {5461, 10921, 1}, {10922, 16383, 2}}
	read := func(s *redistest.Server) {
		t.Helper()
		text, err := s.Client.Text("CLUSTER", "NODES")
		if err != nil {
			t.Fatal(err)
		}
		var m Map
		if u, err := ParseNodes(&m, text, addrs); err != nil || u != "" {
			t.Fatalf("%s: %q %v\n%s", s.Addr, u, err, text)
		}
		owners(t, &m, want...)
	}
	for _, s := range c.Nodes {
		read(s)
	}
	// Slot 93 migrating from node 0 to node 2: node 0 still owns it.
	id0, err := c.NodeID(c.Nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	id2, err := c.NodeID(c.Nodes[2])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Nodes[2].Do("CLUSTER", "SETSLOT", 93, "IMPORTING", id0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Nodes[0].Do("CLUSTER", "SETSLOT", 93, "MIGRATING", id2); err != nil {
		t.Fatal(err)
	}
	read(c.Nodes[0])
	read(c.Nodes[2])
	// After the handover, node 2 says it owns slot 93 (the others learn it
	// by gossip, in their own time).
	if _, err := c.Nodes[2].Do("CLUSTER", "SETSLOT", 93, "NODE", id2); err != nil {
		t.Fatal(err)
	}
	want = [][3]int{{0, 92, 0}, {93, 93, 2}, {94, 5460, 0}, {5461, 10921, 1}, {10922, 16383, 2}}
	read(c.Nodes[2])
	// A node missing from the list: its slots are Unlisted.
	text, err := c.Nodes[1].Client.Text("CLUSTER", "NODES")
	if err != nil {
		t.Fatal(err)
	}
	var m Map
	u, err := ParseNodes(&m, text, addrs[1:])
	if err != nil || u != addrs[0] {
		t.Fatalf("without node 0: %q %v", u, err)
	}
	if m.Owner(0) != Unlisted || m.Owner(5461) != 0 || m.Owner(10922) != 1 {
		t.Fatalf("without node 0: owners %d %d %d", m.Owner(0), m.Owner(5461), m.Owner(10922))
	}
}
