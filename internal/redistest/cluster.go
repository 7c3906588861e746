package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Cluster is a running Redis Cluster of masters only, owned by one test.
type Cluster struct {
	// Nodes are the masters. Node i serves slots i*16384/n to
	// (i+1)*16384/n-1: with 3 masters, 0-5460, 5461-10921 and 10922-16383.
	Nodes []*Server

	busPorts []int // cluster bus port of each node
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
	c := &Cluster{}
	t.Cleanup(c.stop)
	for i := 0; i < n; i++ {
		s, bus, err := startClusterNode()
		if err != nil {
			t.Fatal(err)
		}
		c.Nodes, c.busPorts = append(c.Nodes, s), append(c.busPorts, bus)
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterReadyTimeout)
	defer cancel()
	if err := c.create(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// startClusterNode starts one cluster-enabled redis-server. Its node table
// (nodes.conf) lives in the server's own temporary --dir, removed by Stop.
// Its bus port is held, as its client port is, while it runs.
func startClusterNode() (s *Server, busPort int, err error) {
	bus, err := ReservePort()
	if err != nil {
		return nil, 0, err
	}
	s, err = StartServer("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-port", strconv.Itoa(bus.Number), "--cluster-announce-ip", "127.0.0.1")
	if err != nil {
		bus.Release()
		return nil, 0, err
	}
	s.busPort = bus
	return s, bus.Number, nil
}

// create assigns each node its slot range, gives each a distinct config
// epoch, introduces node 0 to the others, and waits until every node
// sees the whole cluster as ok.
func (c *Cluster) create(ctx context.Context) error {
	n := len(c.Nodes)
	for i, s := range c.Nodes {
		lo, hi := i*16384/n, (i+1)*16384/n-1
		args := []any{"CLUSTER", "ADDSLOTS"}
		for slot := lo; slot <= hi; slot++ {
			args = append(args, slot)
		}
		if _, err := s.Do(args...); err != nil {
			return fmt.Errorf("redistest: node %s: ADDSLOTS %d-%d: %w", s.Addr, lo, hi, err)
		}
		if _, err := s.Do("CLUSTER", "SET-CONFIG-EPOCH", i+1); err != nil {
			return fmt.Errorf("redistest: node %s: SET-CONFIG-EPOCH: %w", s.Addr, err)
		}
	}
	for i, s := range c.Nodes[1:] {
		if _, err := c.Nodes[0].Do("CLUSTER", "MEET", "127.0.0.1", portOf(s.Addr), c.busPorts[i+1]); err != nil {
			return fmt.Errorf("redistest: CLUSTER MEET %s: %w", s.Addr, err)
		}
	}
	for _, s := range c.Nodes {
		if err := waitClusterOK(ctx, s, n); err != nil {
			return err
		}
	}
	return nil
}

// waitClusterOK polls a node's CLUSTER INFO until it reports state ok with
// n known nodes. Redis has no event to wait on; the poll is every 20 ms.
func waitClusterOK(ctx context.Context, s *Server, n int) error {
	want := []string{"cluster_state:ok", "cluster_known_nodes:" + strconv.Itoa(n), "cluster_size:" + strconv.Itoa(n)}
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

// Addrs returns the masters' addresses ("127.0.0.1:port"), in slot order.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		addrs[i] = s.Addr
	}
	return addrs
}

// KeySlot returns key's hash slot, as Redis computes it (CLUSTER KEYSLOT).
func (c *Cluster) KeySlot(key string) (int, error) {
	slot, err := c.Nodes[0].Client.Int("CLUSTER", "KEYSLOT", key)
	return int(slot), err
}

// MasterFor returns the master that owns key's slot, from node 0's slot
// map (CLUSTER SLOTS).
func (c *Cluster) MasterFor(key string) (*Server, error) {
	slot, err := c.KeySlot(key)
	if err != nil {
		return nil, err
	}
	var owner string
	err = c.Nodes[0].Client.With(func(conn *Conn) error {
		v, err := conn.Do("CLUSTER", "SLOTS")
		if err != nil {
			return err
		}
		for _, r := range v.Elems {
			// [start, end, [ip, port, id], replicas...]
			if len(r.Elems) > 2 && r.Elems[0].Int <= int64(slot) && int64(slot) <= r.Elems[1].Int && len(r.Elems[2].Elems) > 1 {
				m := r.Elems[2].Elems
				owner = net.JoinHostPort(string(m[0].Str), strconv.FormatInt(m[1].Int, 10))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, s := range c.Nodes {
		if s.Addr == owner {
			return s, nil
		}
	}
	return nil, fmt.Errorf("redistest: slot %d of %q: owner %q is not a node of this cluster", slot, key, owner)
}

// Do runs one command on the master that owns key's slot.
func (c *Cluster) Do(key string, args ...any) (any, error) {
	m, err := c.MasterFor(key)
	if err != nil {
		return nil, err
	}
	return m.Do(args...)
}

// NodeID returns a node's cluster id (CLUSTER MYID).
func (c *Cluster) NodeID(s *Server) (string, error) {
	return s.Client.Text("CLUSTER", "MYID")
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
