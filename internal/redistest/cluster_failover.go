package redistest

import "context"

// Crash kills s with SIGKILL, keeping its directory and nodes.conf, and
// its ports held, so that Restart brings back the same node.
func (c *Cluster) Crash(s *Server) error { return errNotYet }

// Restart starts a crashed node again on its port and directory, and
// waits until it has rejoined: an old master whose slots were taken over
// rejoins as a replica.
func (c *Cluster) Restart(s *Server) error { return errNotYet }

// WaitPromoted waits until replica is a master with slots.
func (c *Cluster) WaitPromoted(ctx context.Context, replica *Server) error { return errNotYet }

// ManualFailover runs CLUSTER FAILOVER on replica and waits until it is
// a master and its old master is its replica.
func (c *Cluster) ManualFailover(replica *Server) error { return errNotYet }
