// Package dist finds the modules `make build` writes to dist/, so that every
// test reads the same built files instead of compiling its own.
//
//	dist/ratelimit.wasm, dist/ratelimit-higress.wasm   the filter (make build)
//	dist/wasmhost, dist/ratelimitctl                   the commands (make build)
//	dist/testdata/<name>.wasm                         guest fixtures (make fixtures)
//
// The folder is $RATELIMIT_DIST when set, else dist/ beside the go.work file
// found from the working directory upwards.
package dist

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Module names, relative to the dist folder.
const (
	Stock   = "ratelimit.wasm"
	Higress = "ratelimit-higress.wasm"
	Noop    = "testdata/noop.wasm"
	Probe   = "testdata/probe.wasm"
	Sleeper = "testdata/sleeper.wasm"
	Logic   = "testdata/logic.wasm"
)

// Dir returns the dist folder.
func Dir() (string, error) {
	if d := os.Getenv("RATELIMIT_DIST"); d != "" {
		return d, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return filepath.Join(dir, "dist"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("dist: no go.work above the working directory, and RATELIMIT_DIST is not set")
		}
		dir = parent
	}
}

// Read returns the bytes of a built module, or an error that says how to
// build it.
func Read(name string) ([]byte, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("dist: %s is missing: run `make build fixtures` (make test does) first", filepath.Join(dir, name))
	}
	return b, err
}

// CacheDir is where compiled machine code may be kept between test
// binaries (wazero's compilation cache), under the dist folder.
func CacheDir() (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "cache"), nil
}
