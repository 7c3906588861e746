package redistest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// errPrefix fails unless err is a Redis error reply that begins with want.
func errPrefix(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("%s: %v, want an error %q…", what, err, want)
	}
}

// A slot migrated in batches ends owned by its target with every key,
// and while it migrates the nodes answer as plan §0.4 says: on the source
// -TRYAGAIN for a call with some of its keys, -ASK for one with none; on
// the target -MOVED without ASKING, and -TRYAGAIN with ASKING for a
// multi-key call with a key missing.
func TestClusterMigration(t *testing.T) {
	c := StartClusterWith(t, ClusterOptions{Masters: 3, ACL: writeACL(t), Admin: testAdmin, Hostnames: true})
	const n = 25
	key := func(i int) string { return "{mig}k" + strconv.Itoa(i) }
	slot, err := c.KeySlot(key(0))
	if err != nil {
		t.Fatal(err)
	}
	src, err := c.OwnerOf(slot)
	if err != nil {
		t.Fatal(err)
	}
	dst := c.Nodes[(c.index(src)+1)%3]
	for i := 0; i < n; i++ {
		if _, err := src.Do("SET", key(i), i); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.BeginMigration(slot, src, dst); err != nil {
		t.Fatal(err)
	}
	if moved, err := c.MoveKeys(slot, 10); err != nil || moved != 10 {
		t.Fatalf("MoveKeys(%d, 10) = %d, %v", slot, moved, err)
	}
	var here, gone string // a key still on src, one moved to dst
	for i := 0; i < n && (here == "" || gone == ""); i++ {
		_, err := src.Do("GET", key(i))
		switch {
		case err == nil:
			here = key(i)
		case strings.HasPrefix(err.Error(), "ASK "):
			gone = key(i)
		default:
			t.Fatalf("GET %s on the source: %v", key(i), err)
		}
	}
	if here == "" || gone == "" {
		t.Fatalf("after moving 10 of %d keys, none left (%q) or none moved (%q)", n, here, gone)
	}
	_, err = src.Do("MGET", here, gone)
	errPrefix(t, "MGET of a present and a moved key on the source", err, "TRYAGAIN")
	_, err = src.Do("GET", gone)
	errPrefix(t, "GET of a moved key on the source", err, fmt.Sprintf("ASK %d %s:%d", slot, c.Hostname(dst), portOf(dst.Addr)))
	_, err = src.Do("MGET", gone, "{mig}absent")
	errPrefix(t, "MGET of keys the source lacks", err, "ASK ")
	_, err = dst.Do("GET", gone)
	errPrefix(t, "GET on the target without ASKING", err, fmt.Sprintf("MOVED %d %s:%d", slot, c.Hostname(src), portOf(src.Addr)))
	err = dst.Client.With(func(conn *Conn) error {
		if _, err := conn.Do("ASKING"); err != nil {
			return err
		}
		if v, err := conn.Do("GET", gone); err != nil || v.IsNull() {
			t.Errorf("ASKING, GET %s on the target: %v, %v", gone, v, err)
		}
		if _, err := conn.Do("ASKING"); err != nil {
			return err
		}
		_, err := conn.Do("MGET", gone, "{mig}absent")
		errPrefix(t, "ASKING, MGET of a moved and a missing key on the target", err, "TRYAGAIN")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.FinishMigration(slot); err == nil {
		t.Error("FinishMigration with keys left on the source: no error")
	}
	total := 10
	for {
		moved, err := c.MoveKeys(slot, 4)
		if err != nil {
			t.Fatal(err)
		}
		if moved == 0 {
			break
		}
		total += moved
	}
	if total != n {
		t.Errorf("moved %d keys, want %d", total, n)
	}
	if err := c.FinishMigration(slot); err != nil {
		t.Fatal(err)
	}
	if o, err := c.OwnerOf(slot); err != nil || o != dst {
		t.Errorf("OwnerOf(%d) after the migration: %v, %v; want %s", slot, o, err, dst.Addr)
	}
	for i := 0; i < n; i++ {
		if v, err := dst.Client.Text("GET", key(i)); err != nil || v != strconv.Itoa(i) {
			t.Errorf("GET %s on the new owner: %q, %v", key(i), v, err)
		}
	}
	_, err = src.Do("GET", key(0))
	errPrefix(t, "GET on the old owner", err, fmt.Sprintf("MOVED %d %s:%d", slot, c.Hostname(dst), portOf(dst.Addr)))
}
