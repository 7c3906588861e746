package redistest

import (
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Proc is a redis-server on a fixed port that a test can kill and start
// again on the same port, as a crash and a restart would (Start picks a
// new port for each server). Until the first Start, connections to Addr
// are refused.
type Proc struct {
	// Addr is the reserved address, "127.0.0.1:port".
	Addr string

	t   testing.TB
	cmd *exec.Cmd
	dir string
}

// NewProc reserves a free port without starting anything there. The
// server, if running, is killed when the test ends.
func NewProc(t testing.TB) *Proc {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p := &Proc{t: t, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: t.TempDir()}
	t.Cleanup(p.Kill)
	return p
}

// procStartTimeout bounds the wait for a started server to answer PING; it
// guards against a hang.
const procStartTimeout = 30 * time.Second

// Start runs redis-server on the reserved port, with an empty dataset and
// script cache and the filter's library, and returns once it answers PING.
func (p *Proc) Start() {
	p.t.Helper()
	_, port, _ := net.SplitHostPort(p.Addr)
	bin, err := ServerBinary()
	if err != nil {
		p.t.Fatal(err)
	}
	p.cmd = exec.Command(bin, "--port", port, "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", p.dir, "--daemonize", "no")
	out := &strings.Builder{}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	if err := waitPong(p.Addr, procStartTimeout); err != nil {
		p.Kill() // and wait for its output
		p.t.Fatalf("redistest: redis-server on %s: %v\n%s", p.Addr, err, out)
	}
	c := NewClient(p.Addr, Options{})
	defer c.Close()
	if err := LoadLibrary(c); err != nil {
		p.t.Fatal(err)
	}
}

// waitPong polls addr with PING until it answers +PONG.
func waitPong(addr string, timeout time.Duration) error {
	var err error
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var c *Conn
		if c, err = Dial(addr); err != nil {
			continue
		}
		var reply []byte
		reply, err = c.RoundTrip(AppendArgs(nil, "PING"))
		c.Close()
		if err == nil && string(reply) == "+PONG\r\n" {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("PING answered %q", reply)
		}
	}
	return fmt.Errorf("no PONG within %v: %v", timeout, err)
}

// Kill stops redis-server with SIGKILL, as a crash would. It does nothing
// when the server is not running.
func (p *Proc) Kill() {
	if p.cmd == nil {
		return
	}
	p.cmd.Process.Kill()
	p.cmd.Wait()
	p.cmd = nil
}
