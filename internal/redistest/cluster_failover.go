package redistest

import (
	"context"
	"errors"
	"fmt"
)

// Crash kills s with SIGKILL, as a crash would, keeping its directory
// (nodes.conf) and its ports held, so that Restart brings back the same
// node on the same ports. Its Client stays: commands fail until Restart.
func (c *Cluster) Crash(s *Server) error {
	if c.index(s) < 0 {
		return fmt.Errorf("redistest: %s is not a node of this cluster", s.Addr)
	}
	if !s.running() {
		return fmt.Errorf("redistest: %s is not running", s.Addr)
	}
	s.proc.Kill()
	return nil
}

// Restart starts a crashed node again, on its ports and directory, so it
// keeps its node id, and waits until it has rejoined as its peers expect:
// a master whose slots a replica took over comes back as a replica (of
// its replacement) with its link up; a master that still owns its slots
// comes back as that master, empty (persistence is off), with the filter's
// library if the cluster's nodes started with it; a replica as a replica.
// It waits too until every running peer sees it so, and live.
func (c *Cluster) Restart(s *Server) error {
	i := c.index(s)
	if i < 0 {
		return fmt.Errorf("redistest: %s is not a node of this cluster", s.Addr)
	}
	if s.running() || s.proc == nil {
		return fmt.Errorf("redistest: %s is running or stopped, not crashed", s.Addr)
	}
	id := c.ids[i]
	view, err := c.view()
	if err != nil {
		return err
	}
	asMaster := false
	for _, n := range view {
		if n.id == id {
			asMaster = n.has("master") && len(n.slots) > 0
		}
	}
	bin, err := ServerBinary()
	if err != nil {
		return err
	}
	ns, err := launch(bin, s.dir, s.port.Number, c.args[i], c.admin, false)
	if err != nil {
		return err
	}
	ns.Client.Close()
	s.proc = ns.proc
	ctx, cancel := context.WithTimeout(context.Background(), clusterReadyTimeout)
	defer cancel()
	err = poll(ctx, func() error {
		if !asMaster {
			return linkUp(s)
		}
		info, err := s.Client.Text("CLUSTER", "INFO")
		if err == nil && !containsAll(info, []string{"cluster_state:ok"}) {
			err = errors.New("cluster_state not ok")
		}
		return err
	})
	if err == nil && asMaster && c.load {
		err = LoadLibrary(s.Client)
	}
	if err == nil {
		err = c.waitSeen(ctx, id, func(n nodeLine) bool { return n.live() && n.has("master") == asMaster })
	}
	if err != nil {
		return fmt.Errorf("redistest: restarted node %s has not rejoined: %w", s.Addr, err)
	}
	return nil
}

// waitSeen waits until every running node's CLUSTER NODES line for the
// node with id satisfies ok.
func (c *Cluster) waitSeen(ctx context.Context, id string, ok func(nodeLine) bool) error {
	for _, s := range c.Nodes {
		if !s.running() {
			continue
		}
		err := poll(ctx, func() error {
			text, err := s.Client.Text("CLUSTER", "NODES")
			if err != nil {
				return err
			}
			for _, n := range parseClusterNodes(text) {
				if n.id == id && ok(n) {
					return nil
				}
			}
			return fmt.Errorf("node %s does not see %s so yet", s.Addr, id)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// WaitPromoted waits until replica is a master that owns slots, as it and
// every other running node see it, or ctx ends.
func (c *Cluster) WaitPromoted(ctx context.Context, replica *Server) error {
	id, err := c.NodeID(replica)
	if err != nil {
		return err
	}
	if err := c.waitSeen(ctx, id, func(n nodeLine) bool { return n.has("master") && len(n.slots) > 0 }); err != nil {
		return fmt.Errorf("redistest: %s not promoted: %w", replica.Addr, err)
	}
	return nil
}

// ManualFailover runs CLUSTER FAILOVER on replica (a failover its master
// agrees to, losing no write) and waits until the replica is a master
// (WaitPromoted) and its old master is its replica with the link up, as
// every running node sees them.
func (c *Cluster) ManualFailover(replica *Server) error {
	text, err := replica.Client.Text("CLUSTER", "NODES")
	if err != nil {
		return err
	}
	var old *Server
	for _, n := range parseClusterNodes(text) {
		if n.has("myself") && n.has("slave") {
			old, err = c.byID(n.master)
		}
	}
	if old == nil {
		return errors.Join(err, fmt.Errorf("redistest: %s is not a replica", replica.Addr))
	}
	if _, err := replica.Do("CLUSTER", "FAILOVER"); err != nil {
		return fmt.Errorf("redistest: %s: CLUSTER FAILOVER: %w", replica.Addr, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterReadyTimeout)
	defer cancel()
	if err := c.WaitPromoted(ctx, replica); err != nil {
		return err
	}
	err = poll(ctx, func() error { return linkUp(old) })
	if err == nil {
		id, _ := c.NodeID(replica)
		oldID, _ := c.NodeID(old)
		err = c.waitSeen(ctx, oldID, func(n nodeLine) bool { return n.live() && n.has("slave") && n.master == id })
	}
	if err != nil {
		return fmt.Errorf("redistest: old master %s: %w", old.Addr, err)
	}
	return nil
}
