package redistest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ClusterOptions says what StartClusterWith starts.
type ClusterOptions struct {
	Masters, Replicas int           // Replicas per master
	NodeTimeout       time.Duration // cluster-node-timeout; 0 means 2s
	FullCoverage      bool          // cluster-require-full-coverage (false: "no", which we ship)
	ACL               string        // an aclfile loaded by every node ("" for none)
	Admin             Options       // the admin user's credentials with ACL, as StartACL
	Hostnames         bool          // each node announces node-<i>.test (cluster-announce-hostname, preferred-endpoint-type hostname)
	Args              []string      // extra redis-server arguments for every node
}

// defaultNodeTimeout is ClusterOptions.NodeTimeout's default: short, so a
// failover takes seconds, and not 1 s, which a busy 2-core machine can
// miss between two pings and so fail over a live master.
const defaultNodeTimeout = 2 * time.Second

// StartClusterWith starts a Redis Cluster as o says, on loopback ports it
// holds and with persistence off, stopped when the test ends, and returns
// once every node reports cluster_state:ok and knows every other, every
// node sees every replica, and every replica's link to its master is up.
//
// Without ACL, every node has the filter's library (as StartCluster's);
// with ACL, none has (as StartUsers'): LoadLibrary or ratelimitctl install
// loads it, as Admin, on each master, and replication carries it.
//
// Replicas log in to their master as Admin (masteruser and masterauth on
// every node, since any may become a replica), so with ACL Admin needs
// +psync, +replconf and +ping besides its admin rights; Admin with only a
// Password (a requirepass in Args) is the default user. The cluster bus
// needs no credentials.
//
// With Hostnames, -MOVED, -ASK and CLUSTER SLOTS name node-<i>.test, which
// nothing resolves; CLUSTER NODES still has each node's IP, which the
// admin clients dial.
func StartClusterWith(t testing.TB, o ClusterOptions) *Cluster {
	t.Helper()
	if o.Masters < 1 || o.Replicas < 0 {
		t.Fatalf("redistest: a cluster needs at least one master and no negative replicas: %+v", o)
	}
	if o.NodeTimeout == 0 {
		o.NodeTimeout = defaultNodeTimeout
	}
	c := &Cluster{opts: o, admin: o.Admin, load: o.ACL == ""}
	if c.admin == (Options{}) {
		c.admin = Options{Password: passwordOf(o.Args)}
	}
	t.Cleanup(c.stop)
	common, err := c.commonArgs()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < o.Masters*(1+o.Replicas); i++ {
		extra := common
		if o.Hostnames {
			extra = append(extra[:len(extra):len(extra)], "--cluster-announce-hostname", hostname(i),
				"--cluster-preferred-endpoint-type", "hostname")
		}
		if err := c.startNode(append(extra[:len(extra):len(extra)], o.Args...)); err != nil {
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

// commonArgs are the redis-server arguments of every node of a cluster
// StartClusterWith starts, before the hostname and o.Args.
func (c *Cluster) commonArgs() ([]string, error) {
	o := c.opts
	coverage := "no"
	if o.FullCoverage {
		coverage = "yes"
	}
	args := []string{"--cluster-node-timeout", strconv.FormatInt(o.NodeTimeout.Milliseconds(), 10),
		"--cluster-require-full-coverage", coverage,
		// A replica's full sync starts at once, not after 5 s.
		"--repl-diskless-sync-delay", "0"}
	if o.ACL != "" {
		abs, err := filepath.Abs(o.ACL) // redis-server reads it from its --dir
		if err != nil {
			return nil, err
		}
		args = append(args, "--aclfile", abs)
	}
	if c.admin.Username != "" {
		args = append(args, "--masteruser", c.admin.Username)
	}
	if c.admin.Password != "" {
		args = append(args, "--masterauth", c.admin.Password)
	}
	return args, nil
}

func hostname(i int) string { return "node-" + strconv.Itoa(i) + ".test" }

// Hostname is the name s announces ("node-<i>.test", i its index in Nodes)
// when the cluster was started with Hostnames, else "".
func (c *Cluster) Hostname(s *Server) string {
	if i := c.index(s); i >= 0 && c.opts.Hostnames {
		return hostname(i)
	}
	return ""
}

// linkReplicas makes node Masters+m*Replicas+j a replica of master m,
// once it knows that master, and waits until every node sees every
// replica and each replica's link is up.
func (c *Cluster) linkReplicas(ctx context.Context) error {
	m, r := c.opts.Masters, c.opts.Replicas
	if r == 0 {
		return nil
	}
	for i, s := range c.Nodes[m:] {
		id := c.ids[i/r]
		err := poll(ctx, func() error {
			text, err := s.Client.Text("CLUSTER", "NODES")
			if err != nil {
				return err
			}
			for _, n := range parseClusterNodes(text) {
				if n.id == id && !n.has("handshake") {
					return nil
				}
			}
			return errors.New("does not know its master yet")
		})
		if err != nil {
			return fmt.Errorf("redistest: replica %s: %w", s.Addr, err)
		}
		if _, err := s.Do("CLUSTER", "REPLICATE", id); err != nil {
			return fmt.Errorf("redistest: replica %s: CLUSTER REPLICATE %s: %w", s.Addr, id, err)
		}
	}
	for _, s := range c.Nodes[m:] {
		if err := poll(ctx, func() error { return linkUp(s) }); err != nil {
			return fmt.Errorf("redistest: replica %s: %w", s.Addr, err)
		}
	}
	for _, s := range c.Nodes {
		err := poll(ctx, func() error {
			text, err := s.Client.Text("CLUSTER", "NODES")
			if err != nil {
				return err
			}
			n := 0
			for _, l := range parseClusterNodes(text) {
				if l.has("slave") {
					n++
				}
			}
			if n != m*r {
				return fmt.Errorf("sees %d replicas, not %d", n, m*r)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("redistest: node %s: %w", s.Addr, err)
		}
	}
	return nil
}

// linkUp says whether s is a replica whose link to its master is up.
func linkUp(s *Server) error {
	info, err := s.Client.Text("INFO", "replication")
	if err != nil {
		return err
	}
	if !strings.Contains(info, "role:slave\r\n") || !strings.Contains(info, "master_link_status:up\r\n") {
		return fmt.Errorf("not a replica with its link up:\n%s", info)
	}
	return nil
}

// poll calls f every 20 ms until it returns nil or ctx ends, when the
// error holds f's last. Redis has no event to wait on.
func poll(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
