package redistest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// orphanEnv makes the test binary a child that starts a redis-server,
// prints its pid and waits to be killed.
const orphanEnv = "REDISTEST_ORPHAN_CHILD"

// A test process killed midway (SIGKILL, as after a go test -timeout
// panic, runs no cleanup) leaves no redis-server behind.
func TestServerDiesWithTheTestProcess(t *testing.T) {
	if os.Getenv(orphanEnv) == "1" {
		bin, err := ServerBinary()
		if err != nil {
			t.Fatal(err)
		}
		port := HoldPort(t)
		cmd := exec.Command(bin, serverArgs(port.Number, t.TempDir())...)
		p, _, err := StartProcess(cmd, ServerReady)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("pid %d\n", p.cmd.Process.Pid)
		select {}
	}
	if _, err := ServerBinary(); err != nil {
		t.Skip(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^TestServerDiesWithTheTestProcess$", "-test.count=1")
	child.Env = append(os.Environ(), orphanEnv+"=1")
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	pid := 0
	for sc := bufio.NewScanner(out); pid == 0 && sc.Scan(); {
		if s, ok := strings.CutPrefix(sc.Text(), "pid "); ok {
			pid, _ = strconv.Atoi(s)
		}
	}
	if pid == 0 {
		t.Fatal("the child printed no redis-server pid")
	}
	child.Process.Kill()
	child.Wait()
	for deadline := time.Now().Add(30 * time.Second); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscallKill(pid)
			t.Fatalf("redis-server %d still runs after its test process was killed", pid)
		}
	}
}

// alive says pid runs: it exists and is not a zombie (an orphan's zombie
// may never be reaped in a container whose init does not reap).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(s[i+1:], " Z")
}

func syscallKill(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}
