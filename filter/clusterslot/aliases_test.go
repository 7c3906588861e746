package clusterslot

import (
	"os"
	"testing"
)

// Each listed node gets the other form CLUSTER NODES gives it: its ip:port
// when listed by hostname, and the reverse.
func TestAliases(t *testing.T) {
	text := "a 10.0.0.1:6379@16379,node-0.test master - 0 0 1 connected 0-100\n" +
		"b 10.0.0.2:6379@16379,node-1.test slave a 0 0 1 connected\n" +
		"c 10.0.0.3:6379@16379 master - 0 0 2 connected 101-200\n" +
		"d :0@0,node-3.test master,noaddr - 0 0 3 connected\n"
	addrs := []string{"node-0.test:6379", "10.0.0.2:6379", "10.0.0.3:6379", "node-3.test:0"}
	aliases := make([]string, len(addrs))
	Aliases(text, addrs, aliases)
	want := []string{"10.0.0.1:6379", "node-1.test:6379", "", ""}
	for i := range want {
		if aliases[i] != want[i] {
			t.Fatalf("aliases %q, want %q", aliases, want)
		}
	}
}

func FuzzAliases(f *testing.F) {
	for _, name := range []string{"hostnames.txt", "real-3-masters.txt", "flags.txt"} {
		if b, err := os.ReadFile("testdata/nodes/" + name); err == nil {
			f.Add(string(b))
		}
	}
	f.Add("x 1.2.3.4:5@6,h master - 0 0 1 connected 0-5\n")
	f.Add("x h:5@6,h master - 0 0 1 connected 0-5\n")
	f.Fuzz(func(t *testing.T, text string) {
		addrs := []string{"h:5", "1.2.3.4:5", "node-0.test:30001"}
		aliases := make([]string, len(addrs))
		Aliases(text, addrs, aliases)
		for i, a := range aliases {
			if a == addrs[i] {
				t.Fatalf("%q is its own alias", a)
			}
		}
	})
}
