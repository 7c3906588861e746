package main

import (
	"crypto/rand"
	"runtime"
	"time"
)

var runtimeModes = map[string]bool{"sleep": true, "gc": true, "timer-gc": true, "rand-gc": true}

// runtimeMode runs a Go runtime path that may reach WASI poll_oneoff
// (runtime/netpoll_wasip1.go, os_wasip1.go), which proxy-wasm-cpp-host
// before 94091cd answers with ENOSYS; the runtime then throws
// (golang/go#78513). The first timer a VM sets starts the runtime's
// poller, and from then on every garbage collection polls it
// (startTheWorldWithSema calls netpoll(0)).
//   - sleep: the only goroutine sleeps, so the scheduler idles in
//     netpoll(delay);
//   - gc: a collection in a VM that never set a timer: no poll;
//   - timer-gc: a timer, then a collection;
//   - rand-gc: a crypto/rand read (the first arms a one-minute timer,
//     crypto/internal/sysrand), then a collection.
func runtimeMode(mode string) string {
	switch mode {
	case "sleep":
		// Long enough that the scheduler is still waiting when it looks,
		// however busy the machine: a timer already due needs no idle.
		time.Sleep(50 * time.Millisecond)
	case "gc":
		runtime.GC()
	case "timer-gc":
		time.AfterFunc(time.Hour, func() {})
		runtime.GC()
	case "rand-gc":
		var b [8]byte
		rand.Read(b[:])
		runtime.GC()
	}
	return mode + " ok"
}
