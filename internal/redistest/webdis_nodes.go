package redistest

import "testing"

// StartWebdisPerNode starts one Webdis per node of c, replicas included,
// each with redis_host/port of its node and redis_auth [user, pass] (user
// "" for a password only), and an ACL that enables only the commands in
// enabled (nil: everything). It returns node Addr -> Webdis "host:port",
// stopped at cleanup.
func StartWebdisPerNode(t testing.TB, c *Cluster, user, pass string, enabled []string) map[string]string {
	t.Helper()
	t.Fatal("redistest: StartWebdisPerNode: not yet")
	return nil
}
