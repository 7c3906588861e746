package redistest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// testACL has the admin user the clusters' tests log in as (and replicas
// replicate as), and a default user for Webdis 0.1.9, which logs in with
// a password only.
const testACL = `user default on >webdis-pw resetchannels -@all +ping +select +get +set +mget +cluster|nodes ~*
user admin on >admin-pw ~* &* +@all
`

var testAdmin = Options{Username: "admin", Password: "admin-pw"}

func writeACL(t *testing.T) string {
	file := filepath.Join(t.TempDir(), "users.acl")
	if err := os.WriteFile(file, []byte(testACL), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// A 3+3 cluster with an ACL comes up with every replica linked, every
// node has the same users, and -MOVED names a node by its hostname.
func TestClusterWithReplicasACL(t *testing.T) {
	c := StartClusterWith(t, ClusterOptions{Masters: 3, Replicas: 1, ACL: writeACL(t), Admin: testAdmin,
		Hostnames: true, NodeTimeout: 2 * time.Second})
	if len(c.Nodes) != 6 {
		t.Fatalf("%d nodes, want 6", len(c.Nodes))
	}
	var first []string
	for i, s := range c.Nodes {
		acl, err := s.Client.Strings("ACL", "LIST")
		if err != nil {
			t.Fatal(err)
		}
		for j, rule := range acl { // a user's commands come in any order
			f := strings.Fields(rule)
			slices.Sort(f)
			acl[j] = strings.Join(f, " ")
		}
		if i == 0 {
			first = acl
		} else if !slices.Equal(acl, first) {
			t.Errorf("node %d ACL LIST %q, node 0's %q", i, acl, first)
		}
	}
	masters, err := c.Masters()
	if err != nil || !slices.Equal(masters, c.Nodes[:3]) {
		t.Fatalf("Masters: %v, %v", masters, err)
	}
	for i, m := range masters {
		r, err := c.ReplicaOf(m)
		if err != nil || r != c.Nodes[3+i] {
			t.Errorf("ReplicaOf(master %d): %v, %v; want node %d", i, r, err, 3+i)
		}
	}
	for i, slot := range []int{0, 5461, 16383} {
		if o, err := c.OwnerOf(slot); err != nil || o != c.Nodes[i] {
			t.Errorf("OwnerOf(%d): %v, %v; want node %d", slot, o, err, i)
		}
	}
	// "foo" is slot 12182, of master 2; node 0 redirects there by name.
	_, err = c.Nodes[0].Do("GET", "foo")
	if err == nil || !strings.HasPrefix(err.Error(), "MOVED 12182 node-2.test:") {
		t.Errorf("GET foo on node 0: %v, want MOVED 12182 node-2.test:<port>", err)
	}
	if h := c.Hostname(c.Nodes[4]); h != "node-4.test" {
		t.Errorf("Hostname(node 4) = %q", h)
	}
	if _, err := c.Do("foo", "SET", "foo", "bar"); err != nil {
		t.Fatal(err)
	}
	// The replica has it (WAIT: replication is asynchronous).
	if n, err := c.Nodes[2].Client.Int("WAIT", 1, 0); err != nil || n != 1 {
		t.Fatalf("WAIT: %d, %v", n, err)
	}
	if v, err := c.Nodes[5].Client.Strings("MGET", "foo"); err == nil {
		t.Errorf("MGET on a replica without READONLY: %q, want -MOVED", v)
	}
}
