// Command diagrams draws the documentation's explanatory pictures as SVG:
// docs/request-flow.svg, the path of one request, and
// docs/reserve-settle.svg, a token limit reserved, settled and in debt,
// with its numbers from the script's Go model (package algorithms). From
// the repository's root:
//
//	go run ./e2e/cmd/diagrams        (or make diagrams)
//
// Its test fails while the files in docs/ differ from what it draws.
package main

import (
	"flag"
	"log"
	"os"
	"path/filepath"
)

// pictures maps each file's name to its drawing.
var pictures = map[string]func() []byte{
	"request-flow.svg":   requestFlow,
	"reserve-settle.svg": reserveSettle,
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("diagrams: ")
	dir := flag.String("dir", "docs", "directory to write the SVG files to")
	flag.Parse()
	for name, draw := range pictures {
		if err := os.WriteFile(filepath.Join(*dir, name), draw(), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
