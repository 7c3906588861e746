package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The pictures in docs/ are what this command draws: change the drawing,
// then run `go run ./e2e/cmd/diagrams` (make diagrams) and commit both.
func TestDocsPicturesAreCurrent(t *testing.T) {
	for name, draw := range pictures {
		want := draw()
		got, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("docs/%s differs from what the command draws: run go run ./e2e/cmd/diagrams", name)
		}
		if len(want) > 30<<10 {
			t.Errorf("docs/%s: %d bytes, want at most 30 KiB", name, len(want))
		}
	}
}
