package clusterslot

import (
	"strconv"
	"strings"
	"testing"
)

// fragmented is a CLUSTER NODES reply of 3 masters with hostnames, their
// replicas, and slots in single-slot tokens: the most tokens a map has.
func fragmented() (text string, addrs []string) {
	var b strings.Builder
	for n := 0; n < 6; n++ {
		host := "node-" + strconv.Itoa(n) + ".test"
		addrs = append(addrs, host+":6379")
		b.WriteString("id" + strconv.Itoa(n) + " 10.0.0." + strconv.Itoa(n) + ":6379@16379," + host)
		if n >= 3 {
			b.WriteString(" slave id" + strconv.Itoa(n-3) + " 0 0 1 connected\n")
			continue
		}
		b.WriteString(" master - 0 0 1 connected")
		for s := n; s < Slots; s += 3 {
			b.WriteString(" " + strconv.Itoa(s))
		}
		b.WriteString("\n")
	}
	return b.String(), addrs
}

// Slot and ParseNodes allocate nothing: they run per call and per map load
// inside the proxy's VM.
func TestNoAllocations(t *testing.T) {
	keys := []string{"rl:{per-user|alice}:log", "foo", "{", "}{x}", strings.Repeat("k", 200)}
	if n := testing.AllocsPerRun(100, func() {
		for _, k := range keys {
			Slot(k)
		}
	}); n != 0 {
		t.Errorf("Slot: %v allocations", n)
	}
	var m Map
	texts := map[string][]string{readNodes(t, "hostnames.txt"): {"node-a.test:17001", "node-b.test:17002"}}
	text, addrs := fragmented()
	texts[text] = addrs
	texts[readNodes(t, "real-migrating.txt")] = []string{"127.0.0.1:42487", "127.0.0.1:43927", "127.0.0.1:41557"}
	for text, addrs := range texts {
		if n := testing.AllocsPerRun(20, func() {
			if u, err := ParseNodes(&m, text, addrs); err != nil || u != "" {
				t.Fatal(u, err)
			}
		}); n != 0 {
			t.Errorf("ParseNodes: %v allocations", n)
		}
	}
	if n := testing.AllocsPerRun(100, func() { ParseError("MOVED 3999 127.0.0.1:6381") }); n != 0 {
		t.Errorf("ParseError: %v allocations", n)
	}
}

func BenchmarkSlot(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Slot("rl:{per-user|alice}:log")
	}
}

func BenchmarkParseNodes(b *testing.B) {
	text, addrs := fragmented()
	var m Map
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := ParseNodes(&m, text, addrs); err != nil {
			b.Fatal(err)
		}
	}
}
