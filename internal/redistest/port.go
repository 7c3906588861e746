package redistest

import (
	"fmt"
	"net"
	"strconv"
	"syscall"
	"testing"
)

// Port is a loopback TCP port held by this process for a server it is
// about to start there, or as an address where nothing listens.
//
// A port picked by listening on port 0 and closing the listener is free
// only until someone else takes it: go test runs packages in parallel,
// and another package's server (or an outgoing connection) can get the
// same number from the kernel before the server it was picked for binds
// it. Port does not let go: its socket stays bound to 127.0.0.1:Number,
// with SO_REUSEADDR, and never listens. On Linux, while it is held,
//   - no bind to port 0 and no outgoing connection is given the port,
//     since its bind bucket is taken;
//   - a server that sets SO_REUSEADDR too (redis-server, Webdis, Go's
//     net.Listen) can still bind it and listen, as no socket listens there;
//   - a connection to it is refused while no such server listens.
//
// These are Linux's rules, which the tests rely on (make test runs on
// Linux). BSD and macOS let a second socket bind the same address and
// port only with SO_REUSEPORT on both, so there the server would fail
// to bind: untested.
type Port struct {
	Number int
	fd     int // the bound socket; -1 once released
}

// ReservePort binds a new loopback port and holds it until Release.
func ReservePort() (*Port, error) {
	syscall.ForkLock.RLock() // no child may inherit the socket
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("redistest: reserving a port: %w", err)
	}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("redistest: reserving a port: SO_REUSEADDR: %w", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("redistest: reserving a port: bind: %w", err)
	}
	sa, err := syscall.Getsockname(fd)
	in4, ok := sa.(*syscall.SockaddrInet4)
	if err != nil || !ok {
		syscall.Close(fd)
		return nil, fmt.Errorf("redistest: reserving a port: getsockname: %v", err)
	}
	return &Port{Number: in4.Port, fd: fd}, nil
}

// HoldPort is ReservePort for one test: the port is released when the
// test ends, after the cleanups registered later (a server's stop).
func HoldPort(t testing.TB) *Port {
	t.Helper()
	p, err := ReservePort()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Release)
	return p
}

// Addr is "127.0.0.1:Number".
func (p *Port) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Number)) }

// Release lets the port go. It is safe to call twice.
func (p *Port) Release() {
	if p.fd >= 0 {
		syscall.Close(p.fd)
		p.fd = -1
	}
}
