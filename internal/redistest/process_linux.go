package redistest

import (
	"os/exec"
	"syscall"
)

// dieWithTest has the kernel kill cmd's process (SIGKILL) when the test
// binary dies without its cleanups: a -timeout panic, a t.Fatal outside
// the test's goroutine, an interrupted go test. Without it, every server
// the binary started is left running, holding its port and temporary
// directory. Linux sends the signal when the thread that started the
// process exits; Go keeps its threads, but for one whose goroutine ends
// locked to it (runtime.LockOSThread), which nothing here does.
func dieWithTest(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
