package redistest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// A crashed master's replica takes over its slots and data; the old
// master restarts as the new one's replica, with its node id; a manual
// failover then swaps the two back.
func TestClusterCrashRestartFailover(t *testing.T) {
	c := StartClusterWith(t, ClusterOptions{Masters: 3, Replicas: 1, ACL: writeACL(t), Admin: testAdmin})
	m0, r0 := c.Nodes[0], c.Nodes[3]
	slot, _ := c.KeySlot("bar")
	owner, err := c.OwnerOf(slot)
	if err != nil || owner != m0 {
		t.Fatalf("slot %d of bar: owner %v, %v; want master 0", slot, owner, err)
	}
	if _, err := m0.Do("SET", "bar", "v"); err != nil {
		t.Fatal(err)
	}
	if n, err := m0.Client.Int("WAIT", 1, 0); err != nil || n != 1 {
		t.Fatalf("WAIT: %d, %v", n, err)
	}
	id, _ := c.NodeID(m0)
	if err := c.Crash(m0); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.WaitPromoted(ctx, r0); err != nil {
		t.Fatal(err)
	}
	t.Logf("crash of master 0 to its replica promoted, seen by every node: %v (node timeout 2s)", time.Since(start).Round(time.Millisecond))
	if o, err := c.OwnerOf(slot); err != nil || o != r0 {
		t.Errorf("slot %d after failover: owner %v, %v; want the promoted replica", slot, o, err)
	}
	if v, err := r0.Client.Text("GET", "bar"); err != nil || v != "v" {
		t.Errorf("GET bar on the promoted replica: %q, %v", v, err)
	}
	if masters, err := c.Masters(); err != nil || len(masters) != 3 || masters[0] != c.Nodes[1] {
		t.Errorf("Masters after failover: %v, %v", masters, err)
	}
	if err := c.Restart(m0); err != nil {
		t.Fatal(err)
	}
	if got, err := m0.Client.Text("CLUSTER", "MYID"); err != nil || got != id {
		t.Errorf("restarted node's id %q, %v; want %q", got, err, id)
	}
	if r, err := c.ReplicaOf(r0); err != nil || r != m0 {
		t.Errorf("ReplicaOf(promoted) = %v, %v; want the old master", r, err)
	}
	start = time.Now()
	if err := c.ManualFailover(m0); err != nil {
		t.Fatal(err)
	}
	t.Logf("manual failover: %v", time.Since(start).Round(time.Millisecond))
	if o, err := c.OwnerOf(slot); err != nil || o != m0 {
		t.Errorf("slot %d after the manual failover: owner %v, %v; want master 0 again", slot, o, err)
	}
	if v, err := m0.Client.Text("GET", "bar"); err != nil || v != "v" {
		t.Errorf("GET bar on master 0 again: %q, %v", v, err)
	}
	if r, err := c.ReplicaOf(m0); err != nil || r != r0 {
		t.Errorf("ReplicaOf(master 0) = %v, %v; want node 3", r, err)
	}
}

// With cluster-require-full-coverage yes, the other masters answer
// -CLUSTERDOWN for their own slots from master 0's FAIL until its
// replica's promotion: the reason "no" is shipped. The window is logged.
func TestClusterFullCoverageDown(t *testing.T) {
	c := StartClusterWith(t, ClusterOptions{Masters: 3, Replicas: 1, FullCoverage: true})
	m0, r0, m2 := c.Nodes[0], c.Nodes[3], c.Nodes[2]
	// "foo" is slot 12182, of master 2.
	if _, err := m2.Do("SET", "foo", "bar"); err != nil {
		t.Fatal(err)
	}
	var (
		mu          sync.Mutex
		first, last time.Time
		downs, oks  int
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, err := m2.Do("GET", "foo")
			now := time.Now()
			mu.Lock()
			if err != nil && strings.HasPrefix(err.Error(), "CLUSTERDOWN") {
				if first.IsZero() {
					first = now
				}
				last = now
				downs++
			} else if err == nil {
				oks++
			}
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
		}
	}()
	if err := c.Crash(m0); err != nil {
		t.Fatal(err)
	}
	crash := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.WaitPromoted(ctx, r0); err != nil {
		t.Fatal(err)
	}
	promoted := time.Since(crash)
	// The state turns ok again once master 2 sees the promotion.
	err := poll(ctx, func() error {
		_, err := m2.Do("GET", "foo")
		return err
	})
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if downs == 0 {
		t.Fatal("master 2 never answered CLUSTERDOWN for its own slot while master 0 was down")
	}
	t.Logf("full coverage: master 2 answered CLUSTERDOWN for its own slot %d times from %v to %v after the crash (window %v); promotion seen at %v",
		downs, first.Sub(crash).Round(time.Millisecond), last.Sub(crash).Round(time.Millisecond),
		last.Sub(first).Round(time.Millisecond), promoted.Round(time.Millisecond))
}
