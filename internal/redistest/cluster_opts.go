package redistest

import (
	"errors"
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

// StartClusterWith starts a Redis Cluster as o says and returns once
// every node reports cluster_state:ok and knows every other, and every
// replica's link to its master is up.
func StartClusterWith(t testing.TB, o ClusterOptions) *Cluster {
	t.Helper()
	t.Fatal("redistest: StartClusterWith: not yet")
	return nil
}

// Hostname is the name s announces ("node-<i>.test") when the cluster was
// started with Hostnames, else "".
func (c *Cluster) Hostname(s *Server) string { return "" }

var errNotYet = errors.New("redistest: not yet")
