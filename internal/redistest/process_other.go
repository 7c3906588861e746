//go:build !linux

package redistest

import "os/exec"

// dieWithTest does nothing off Linux: a server outlives a test binary
// that dies without its cleanups (process_linux.go).
func dieWithTest(*exec.Cmd) {}
