package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Cluster is a running Redis Cluster owned by one test.
type Cluster struct {
	// Nodes are every node, in start order. StartCluster starts masters
	// only: node i serves slots i*16384/n to (i+1)*16384/n-1, with 3
	// masters 0-5460, 5461-10921 and 10922-16383. StartClusterWith starts
	// its Masters first, in that slot order, then the replicas of master
	// 0, of master 1, and so on. Roles change on failover; Masters and
	// ReplicaOf read them live.
	Nodes []*Server

	busPorts []int          // cluster bus port of each node
	opts     ClusterOptions // as started; zero for StartCluster
	ids      []string       // each node's cluster id, which a restart keeps
	args     [][]string     // each node's extra redis-server arguments, for Restart
	admin    Options        // how each node's Client logs in
	load     bool           // load the filter's library on a node that starts as a master

	mu         sync.Mutex
	migrations map[int]migration // slots BeginMigration started, until FinishMigration
}

// clusterReadyTimeout bounds the wait for cluster_state:ok, against a
// hang only: a busy machine may take long. A fresh master waits about 2 s
// after it starts before it declares the state ok
// (CLUSTER_WRITABLE_DELAY in cluster.c), so that is what a start costs.
const clusterReadyTimeout = 2 * time.Minute

// StartCluster starts a Redis Cluster of n masters (3 is the usual choice)
// with no replicas, on loopback ports it holds and with persistence off, and
// stops it when the test ends. It assigns the slots and joins the nodes
// itself (CLUSTER ADDSLOTS, SET-CONFIG-EPOCH, MEET), as redis-cli --cluster
// create does, and returns once every node reports cluster_state:ok and
// the slot map of all n masters. It needs redis-server 7.0 or later (for
// --cluster-port: the bus port is picked free too, not port+10000).
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("redistest: a cluster needs at least one master, not %d", n)
	}
	c := &Cluster{opts: ClusterOptions{Masters: n}, load: true}
	t.Cleanup(c.stop)
	for i := 0; i < n; i++ {
		if err := c.startNode(nil); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterReadyTimeout)
	defer cancel()
	if err := c.create(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// startNode starts one more cluster-enabled redis-server, with extra
// arguments after the common ones. Its node table (nodes.conf) lives in
// its own temporary --dir, removed by Stop, kept by Crash. Its bus port
// is held, as its client port is, while it runs.
func (c *Cluster) startNode(extra []string) error {
	bin, err := ServerBinary()
	if err != nil {
		return err
	}
	bus, err := ReservePort()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "redistest")
	if err != nil {
		bus.Release()
		return err
	}
	args := append([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-port", strconv.Itoa(bus.Number), "--cluster-announce-ip", "127.0.0.1"}, extra...)
	admin := c.admin
	if admin == (Options{}) {
		admin = Options{Password: passwordOf(args)}
	}
	s, err := launchHeld(bin, dir, args, admin, c.load)
	if err != nil {
		bus.Release()
		os.RemoveAll(dir)
		return err
	}
	s.busPort = bus
	id, err := s.Client.Text("CLUSTER", "MYID")
	if err != nil {
		s.Stop()
		return fmt.Errorf("redistest: node %s: CLUSTER MYID: %w", s.Addr, err)
	}
	c.Nodes, c.busPorts = append(c.Nodes, s), append(c.busPorts, bus.Number)
	c.ids, c.args = append(c.ids, id), append(c.args, args)
	return nil
}

// create assigns each master its slot range, gives each node a distinct
// config epoch, introduces node 0 to the others, and waits until every
// node sees the whole cluster as ok.
func (c *Cluster) create(ctx context.Context) error {
	m := c.opts.Masters
	for i, s := range c.Nodes[:m] {
		lo, hi := i*16384/m, (i+1)*16384/m-1
		args := []any{"CLUSTER", "ADDSLOTS"}
		for slot := lo; slot <= hi; slot++ {
			args = append(args, slot)
		}
		if _, err := s.Do(args...); err != nil {
			return fmt.Errorf("redistest: node %s: ADDSLOTS %d-%d: %w", s.Addr, lo, hi, err)
		}
	}
	for i, s := range c.Nodes {
		if _, err := s.Do("CLUSTER", "SET-CONFIG-EPOCH", i+1); err != nil {
			return fmt.Errorf("redistest: node %s: SET-CONFIG-EPOCH: %w", s.Addr, err)
		}
	}
	for i, s := range c.Nodes[1:] {
		if _, err := c.Nodes[0].Do("CLUSTER", "MEET", "127.0.0.1", portOf(s.Addr), c.busPorts[i+1]); err != nil {
			return fmt.Errorf("redistest: CLUSTER MEET %s: %w", s.Addr, err)
		}
	}
	if err := c.linkReplicas(ctx); err != nil {
		return err
	}
	for _, s := range c.Nodes {
		if err := waitClusterOK(ctx, s, len(c.Nodes), m); err != nil {
			return err
		}
	}
	return nil
}

// waitClusterOK polls a node's CLUSTER INFO until it reports state ok with
// n known nodes, of which size masters serve slots. Redis has no event to
// wait on; the poll is every 20 ms.
func waitClusterOK(ctx context.Context, s *Server, n, size int) error {
	want := []string{"cluster_state:ok", "cluster_known_nodes:" + strconv.Itoa(n), "cluster_size:" + strconv.Itoa(size)}
	var info string
	for {
		var err error
		info, err = s.Client.Text("CLUSTER", "INFO")
		if err == nil && containsAll(info, want) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redistest: cluster node %s not ready (%v); last CLUSTER INFO:\n%s", s.Addr, errors.Join(ctx.Err(), err), info)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func containsAll(info string, lines []string) bool {
	for _, l := range lines {
		if !strings.Contains(info, l+"\r\n") {
			return false
		}
	}
	return true
}

// Addrs returns the nodes' addresses ("127.0.0.1:port"), in the order of
// Nodes: the masters' in slot order first.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		addrs[i] = s.Addr
	}
	return addrs
}

// KeySlot returns key's hash slot, as Redis computes it (CLUSTER KEYSLOT
// on a running node).
func (c *Cluster) KeySlot(key string) (int, error) {
	var slot int64
	err := c.anyNode(func(s *Server) (err error) {
		slot, err = s.Client.Int("CLUSTER", "KEYSLOT", key)
		return err
	})
	return int(slot), err
}

// MasterFor returns the master that owns key's slot now (OwnerOf).
func (c *Cluster) MasterFor(key string) (*Server, error) {
	slot, err := c.KeySlot(key)
	if err != nil {
		return nil, err
	}
	return c.OwnerOf(slot)
}

// Do runs one command on the master that owns key's slot.
func (c *Cluster) Do(key string, args ...any) (any, error) {
	m, err := c.MasterFor(key)
	if err != nil {
		return nil, err
	}
	return m.Do(args...)
}

// NodeID returns a node's cluster id (CLUSTER MYID, as it answered at
// start: a restart keeps it, and a crashed node still has it).
func (c *Cluster) NodeID(s *Server) (string, error) {
	i := c.index(s)
	if i < 0 {
		return "", fmt.Errorf("redistest: %s is not a node of this cluster", s.Addr)
	}
	return c.ids[i], nil
}

// index is s's index in Nodes, or -1.
func (c *Cluster) index(s *Server) int {
	for i, n := range c.Nodes {
		if n == s {
			return i
		}
	}
	return -1
}

func (c *Cluster) stop() {
	for _, s := range c.Nodes {
		s.Stop()
	}
}

// portOf returns the port of a "host:port" address.
func portOf(addr string) int {
	p, _ := strconv.Atoi(addr[strings.LastIndexByte(addr, ':')+1:])
	return p
}
