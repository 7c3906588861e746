package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const orphanHelperEnv = "REDISTEST_ORPHAN_HELPER"

// A test binary that dies without its cleanups (a -timeout panic, an
// interrupted go test) leaves no server running: the kernel kills it.
func TestServersDieWithTheTestBinary(t *testing.T) {
	if os.Getenv(orphanHelperEnv) != "" {
		t.Skip("in the helper")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestOrphanHelper$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), orphanHelperEnv+"=1")
	out, _ := cmd.CombinedOutput()
	m := regexp.MustCompile(`server pid (\d+)`).FindSubmatch(out)
	if m == nil || cmd.ProcessState.ExitCode() != 3 {
		t.Fatalf("helper: %v, output:\n%s", cmd.ProcessState, out)
	}
	pid, _ := strconv.Atoi(string(m[1]))
	deadline := time.Now().Add(time.Minute) // against a hang only
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("redis-server %d outlived the test binary that started it", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOrphanHelper starts a server and exits at once, as a test binary
// that dies does: no cleanup runs.
func TestOrphanHelper(t *testing.T) {
	if os.Getenv(orphanHelperEnv) == "" {
		t.Skip("run by TestServersDieWithTheTestBinary")
	}
	s := Start(t)
	fmt.Printf("server pid %d\n", s.proc.cmd.Process.Pid)
	os.Exit(3)
}

// alive says whether pid is a process that has not exited (a zombie has).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(after, "Z")
}
