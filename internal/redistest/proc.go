package redistest

import "testing"

// Proc is a redis-server on a fixed port that a test can kill and start
// again on the same port, as a crash and a restart would (Start picks a
// new port for each server). The port is held (HoldPort) for the whole
// test, so no other server takes it while this one is down: until the
// first Start, and between Kill and Start, connections to Addr are
// refused.
type Proc struct {
	// Addr is the held address, "127.0.0.1:port".
	Addr string

	t    testing.TB
	port *Port
	proc *Process
	dir  string
}

// NewProc holds a port without starting anything there. The server, if
// running, is killed when the test ends.
func NewProc(t testing.TB) *Proc {
	t.Helper()
	port := HoldPort(t)
	p := &Proc{t: t, Addr: port.Addr(), port: port, dir: t.TempDir()}
	t.Cleanup(p.Kill)
	return p
}

// Start runs redis-server on the held port, with an empty dataset and
// script cache and the filter's library, and returns once it has logged
// that it accepts connections.
func (p *Proc) Start() {
	p.t.Helper()
	bin, err := ServerBinary()
	if err != nil {
		p.t.Fatal(err)
	}
	s, err := launch(bin, p.dir, p.port.Number, nil, Options{}, true)
	if err != nil {
		p.t.Fatal(err)
	}
	s.Client.Close()
	p.proc = s.proc
}

// Kill stops redis-server with SIGKILL, as a crash would. It does nothing
// when the server is not running.
func (p *Proc) Kill() {
	if p.proc == nil {
		return
	}
	p.proc.Kill()
	p.proc = nil
}
