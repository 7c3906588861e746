// Package wasmbuild builds Go packages of this module to proxy-wasm
// modules for tests and benchmarks, exactly as `make build` builds the
// filter: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared.
package wasmbuild

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// ModuleRoot returns the directory of this Go module (where go.mod is).
func ModuleRoot() (string, error) {
	out, err := exec.Command(goBin(), "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the module (go env GOMOD = %q)", mod)
	}
	return filepath.Dir(mod), nil
}

func goBin() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// Build builds the package in pkgDir (relative to the module root) with
// the given build tags and returns the module's bytes.
func Build(pkgDir, tags string) ([]byte, error) {
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "wasmbuild")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "out.wasm")
	cmd := exec.Command(goBin(), "build", "-buildmode=c-shared", "-tags", tags, "-o", out, ".")
	cmd.Dir = filepath.Join(root, pkgDir)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building %s: %v\n%s", pkgDir, err, b)
	}
	return os.ReadFile(out)
}
