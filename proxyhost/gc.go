package proxyhost

import (
	"os"
	"runtime/debug"
)

// gcPercent is the Go GC's target (GOGC) in each VM unless the VM's
// environment sets GOGC (vm_config.environment_variables). Linear memory
// never shrinks, and at Go's default of 100 the heap of a busy VM grows by
// one more 4 MiB arena; at 25 it stays in the first (BENCHMARKS.md, "V8").
const gcPercent = 25

func init() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
}
