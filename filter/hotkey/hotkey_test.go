package hotkey

import (
	"strconv"
	"testing"
)

// A key's count is never below its requests, whatever else is counted,
// and a key alone is counted exactly.
func TestSketchNeverCountsBelowTheTruth(t *testing.T) {
	var h Sketch
	for i := range 10 {
		if n := h.Add([]byte("alone")); n != int64(i+1) {
			t.Fatalf("request %d of a key alone counted %d", i+1, n)
		}
	}
	h = Sketch{}
	truth := map[string]int64{}
	for i := range 50_000 {
		k := "k" + strconv.Itoa(i%3000)
		truth[k]++
		if n := h.Add([]byte(k)); n < truth[k] {
			t.Fatalf("%s counted %d after %d requests", k, n, truth[k])
		}
	}
}
