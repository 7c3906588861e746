package deploy

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/clusterslot"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// What ratelimit-admin (users-cluster.acl) may do, beyond
// checkClusterRights: TestShippedACLOnCluster runs these on its cluster.

// checkAdminKeys shows what ratelimit-admin may do to keys. MIGRATE and
// RESTORE-ASKING, which resharding needs, read and write the value of any
// rl:* key: MIGRATE … COPY sends it to any server the caller names, and
// RESTORE-ASKING writes any value. Outside rl:* both are refused.
func checkAdminKeys(t *testing.T, c *redistest.Cluster) {
	t.Helper()
	plain := redistest.Start(t) // a server of the caller's, no ACL
	if _, err := plain.Do("SET", "v", "platinum"); err != nil {
		t.Fatal(err)
	}
	payload, err := plain.Client.Text("DUMP", "v")
	if err != nil {
		t.Fatal(err)
	}
	key := "rl:{acl-admin|u}:tier"
	owner, err := c.MasterFor(key)
	if err != nil {
		t.Fatal(err)
	}
	admin := redistest.NewClient(owner.Addr, clusterAdmin)
	defer admin.Close()
	if _, err := admin.Do("RESTORE-ASKING", key, 0, payload); err != nil {
		t.Errorf("admin: RESTORE-ASKING %s: %v, want it written", key, err)
	}
	op := redistest.NewClient(owner.Addr, operator)
	defer op.Close()
	if v, err := op.Text("GET", key); v != "platinum" || err != nil {
		t.Errorf("after the admin's RESTORE-ASKING, GET %s: %q, %v; want platinum", key, v, err)
	}
	_, port, _ := strings.Cut(plain.Addr, ":")
	if _, err := admin.Do("MIGRATE", "127.0.0.1", port, key, 0, 30000, "COPY"); err != nil {
		t.Errorf("admin: MIGRATE … COPY %s to another server: %v, want it copied", key, err)
	}
	if v, err := plain.Client.Text("GET", key); v != "platinum" || err != nil {
		t.Errorf("the admin's MIGRATE copy of %s: %q, %v; want platinum", key, v, err)
	}
	for _, args := range [][]any{
		{"RESTORE-ASKING", "secret", 0, payload},
		{"MIGRATE", "127.0.0.1", port, "secret", 0, 30000, "COPY"},
		{"MIGRATE", "127.0.0.1", port, "", 0, 30000, "COPY", "KEYS", key, "secret"},
	} {
		if _, err := admin.Do(args...); !isRedisError(err, "NOPERM") {
			t.Errorf("admin: %.60q: %v, want NOPERM", args, err)
		}
	}
}

// reshardAsAdmin runs the runbook's redis-cli --cluster reshard as
// ratelimit-admin (docs/operating.md): slots holding a key move, and
// the key with them.
func reshardAsAdmin(t *testing.T, c *redistest.Cluster) {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Log("no redis-cli: the runbook's reshard is not run")
		return
	}
	masters, err := c.Masters()
	if err != nil || len(masters) < 2 {
		t.Fatalf("masters: %d, %v", len(masters), err)
	}
	src, dst := masters[1], masters[2]
	first, err := src.Client.Text("CLUSTER", "NODES") // as the admin
	if err != nil {
		t.Fatal(err)
	}
	// redis-cli moves the source's lowest slots: a key in one of them.
	lo := -1
	for _, line := range strings.Split(first, "\n") {
		if f := strings.Fields(line); len(f) > 8 && strings.Contains(f[2], "myself") {
			lo, _ = strconv.Atoi(strings.SplitN(f[8], "-", 2)[0])
		}
	}
	var key string
	for i := 0; key == "" && i < 1<<20; i++ {
		if k := "rl:{reshard-" + strconv.Itoa(i) + "}:tier"; int(clusterslot.Slot(k)) < lo+20 && int(clusterslot.Slot(k)) >= lo {
			key = k
		}
	}
	op := redistest.NewClient(src.Addr, operator)
	defer op.Close()
	if lo < 0 || key == "" {
		t.Fatalf("no key in %s's first slots (from %d)", src.Addr, lo)
	}
	if _, err := op.Do("SET", key, "silver"); err != nil {
		t.Fatal(err)
	}
	srcID, _ := c.NodeID(src)
	dstID, _ := c.NodeID(dst)
	cmd := exec.Command(cli, "--user", clusterAdmin.Username, "--no-auth-warning", "--cluster", "reshard", src.Addr,
		"--cluster-from", srcID, "--cluster-to", dstID, "--cluster-slots", "20", "--cluster-yes", "--cluster-pipeline", "10")
	cmd.Env = append(os.Environ(), "REDISCLI_AUTH="+clusterAdmin.Password)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster reshard as %s: %v\n%s", clusterAdmin.Username, err, out)
	}
	at := redistest.NewClient(dst.Addr, operator)
	defer at.Close()
	if v, err := at.Text("GET", key); v != "silver" || err != nil {
		t.Errorf("after redis-cli's reshard, GET %s on %s: %q, %v; want silver", key, dst.Addr, v, err)
	}
}
