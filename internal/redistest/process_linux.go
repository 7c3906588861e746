package redistest

import (
	"os/exec"
	"syscall"
)

// dieWithTest has the kernel kill cmd's process when the test process
// dies, however it dies (a go test -timeout panic, SIGKILL): no
// redis-server or webdis is left behind, reparented to init. (The signal
// follows the forking thread, which Go keeps: nothing here locks one.)
func dieWithTest(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
