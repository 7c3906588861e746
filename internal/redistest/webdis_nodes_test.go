package redistest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// webdisGet sends GET /<cmd> to a Webdis with this package's basic auth
// and returns the status and body.
func webdisGet(t *testing.T, addr, cmd string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+addr+"/"+cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(WebdisUser, WebdisPassword)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Every node, replicas included, gets its own Webdis, which reaches that
// node as the ACL's user and refuses a command it does not enable.
func TestStartWebdisPerNode(t *testing.T) {
	c := StartClusterWith(t, ClusterOptions{Masters: 2, Replicas: 1, ACL: writeACL(t), Admin: testAdmin})
	web := StartWebdisPerNode(t, c, "", "webdis-pw", []string{"CLUSTER", "GET"})
	if len(web) != len(c.Nodes) {
		t.Fatalf("%d Webdis for %d nodes", len(web), len(c.Nodes))
	}
	for i, s := range c.Nodes {
		id, _ := c.NodeID(s)
		code, body := webdisGet(t, web[s.Addr], "CLUSTER/NODES")
		if code != 200 || !strings.Contains(body, id+" 127.0.0.1:") || !strings.Contains(body, "myself") {
			t.Errorf("node %d: CLUSTER/NODES through its Webdis: %d %.200s", i, code, body)
		}
		// The line marked myself is this node's.
		for _, line := range strings.Split(body, "\\n") {
			if strings.Contains(line, "myself") && !strings.Contains(line, id) {
				t.Errorf("node %d: its Webdis reaches another node: %q", i, line)
			}
		}
		if code, body := webdisGet(t, web[s.Addr], "SET/x/1"); code != 403 {
			t.Errorf("node %d: SET, not enabled, through its Webdis: %d %.200s, want 403", i, code, body)
		}
		// GET is enabled in Webdis; on a node that does not own the slot
		// the reply is Redis's -MOVED, as an ordinary error.
		want := `{"GET":[false,"MOVED 12182 127.0.0.1:` // "foo" is slot 12182, of master 1
		if s == c.Nodes[1] {
			want = `{"GET":null}`
		}
		if code, body := webdisGet(t, web[s.Addr], "GET/foo"); code != 200 || !strings.HasPrefix(body, want) {
			t.Errorf("node %d: GET/foo through its Webdis: %d %.200s, want 200 %s…", i, code, body, want)
		}
	}
	// A crashed node's Webdis answers 503; once the node is back, the same
	// Webdis reaches it again.
	r := c.Nodes[2]
	if err := c.Crash(r); err != nil {
		t.Fatal(err)
	}
	if code, body := webdisGet(t, web[r.Addr], "CLUSTER/NODES"); code != 503 {
		t.Errorf("CLUSTER/NODES through a crashed node's Webdis: %d %.200s, want 503", code, body)
	}
	if err := c.Restart(r); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := poll(ctx, func() error {
		if code, body := webdisGet(t, web[r.Addr], "CLUSTER/NODES"); code != 200 {
			return fmt.Errorf("%d %.200s", code, body)
		}
		return nil
	})
	if err != nil {
		t.Errorf("Webdis of a restarted node: %v", err)
	}
}
