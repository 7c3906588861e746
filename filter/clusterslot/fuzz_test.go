package clusterslot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseNodes: any text and self (ParseNodesFrom), never a panic; on success every owner is a
// listed node, Unknown or Unlisted, and unlisted is set exactly when a slot
// is Unlisted.
func FuzzParseNodes(f *testing.F) {
	files, _ := filepath.Glob("testdata/nodes/*.txt")
	if len(files) == 0 {
		f.Fatal("no seeds in testdata/nodes")
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b), "127.0.0.1:42487,node-b.test:17002,redis-0.redis:6379,10.0.0.3:6379", -1)
	}
	f.Add("a 1.2.3.4:5@6 master - 0 0 1 connected 0-16383 [1->-b]\n", "1.2.3.4:5", 0)
	f.Add("a ::1:5@6,h,shard-id=x myself,master,fail? - 0 0 1 connected 0 1 2-3\r\n", "h:5", 0)
	f.Add("a 1.2.3.4:5@6 master - 0 0 1 connected 0-16383 0-16383 1\n", "", 0)
	f.Add("a :5@6 myself,master - 0 0 1 connected 0-16383\n", "h:5,i:5", 1)
	f.Add("a :5@6 myself,master - 0 0 1 connected 0-16383\n", "h:5", 1)
	f.Fuzz(func(t *testing.T, text, list string, self int) {
		var addrs []string
		if list != "" {
			addrs = strings.Split(list, ",")
		}
		var m Map
		u, err := ParseNodesFrom(&m, text, addrs, self)
		if err != nil {
			return
		}
		sawUnlisted := false
		for s, o := range m {
			switch {
			case o == Unlisted:
				sawUnlisted = true
			case o != Unknown && int(o) >= len(addrs):
				t.Fatalf("slot %d: owner %d of %d addresses", s, o, len(addrs))
			}
		}
		if sawUnlisted != (u != "") {
			t.Fatalf("unlisted %q, a slot Unlisted: %v", u, sawUnlisted)
		}
	})
}

// FuzzParseError: a redirection's slot is in range and its address is a
// part of the message without spaces.
func FuzzParseError(f *testing.F) {
	for _, s := range []string{"MOVED 3999 127.0.0.1:6381", "-ASK 12182 node-b.test:17002", "-TRYAGAIN Multiple keys request during rehashing of slot",
		"CLUSTERDOWN Hash slot not served", "MOVED 16384 h:1", "ERR x", "-MOVED 1 :6380\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		k, slot, addr := ParseError(msg)
		switch k {
		case Moved, Ask:
			if slot >= Slots || addr == "" || strings.ContainsFunc(addr, func(r rune) bool { return r <= ' ' || r > '~' }) || !strings.Contains(msg, addr) {
				t.Fatalf("%q: %v %d %q", msg, k, slot, addr)
			}
		case None, TryAgain, ClusterDown:
			if slot != 0 || addr != "" {
				t.Fatalf("%q: %v %d %q", msg, k, slot, addr)
			}
		default:
			t.Fatalf("%q: kind %d", msg, k)
		}
	})
}

// FuzzSlot compares Slot with the cluster specification's HASH_SLOT, written
// with the standard library.
func FuzzSlot(f *testing.F) {
	for _, k := range []string{"foo", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap", "{", "}{", ""} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		tag := key
		if s := strings.IndexByte(key, '{'); s >= 0 {
			if e := strings.IndexByte(key[s+1:], '}'); e > 0 {
				tag = key[s+1 : s+1+e]
			}
		}
		if got, want := Slot(key), crc16(tag)&(Slots-1); got != want {
			t.Fatalf("Slot(%q) = %d, want %d", key, got, want)
		}
	})
}
