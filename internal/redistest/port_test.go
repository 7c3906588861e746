package redistest

import (
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
)

// A server that could not bind its port, because another listener took it
// between the port's pick and the server's start (another package's
// server, started at the same moment), is not mistaken for that listener:
// the start fails and says why.
func TestLaunchOnATakenPort(t *testing.T) {
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	bin, err := ServerBinary()
	if err != nil {
		t.Fatal(err)
	}
	port := other.Addr().(*net.TCPAddr).Port
	s, err := launch(bin, t.TempDir(), port, nil, Options{}, false)
	if err == nil {
		s.Stop()
		t.Fatalf("launch on port %d, which another listener holds, returned a server there", port)
	}
	if !strings.Contains(err.Error(), "Address already in use") {
		t.Fatalf("launch on a taken port: %v; want the server's own cause, Address already in use", err)
	}
}

// A held port refuses connections, is never handed to a bind to port 0
// while held, and takes a server whose listener sets SO_REUSEADDR, as
// redis-server's does.
func TestHeldPort(t *testing.T) {
	p := HoldPort(t)
	if c, err := net.Dial("tcp", p.Addr()); err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("dialing a held port: %v, want connection refused", err)
	}
	var others []net.Listener
	defer func() {
		for _, l := range others {
			l.Close()
		}
	}()
	for range 2000 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		others = append(others, l)
		if l.Addr().(*net.TCPAddr).Port == p.Number {
			t.Fatalf("a listener on port 0 was given held port %d", p.Number)
		}
	}
	bin, err := ServerBinary()
	if err != nil {
		t.Fatal(err)
	}
	s, err := launch(bin, t.TempDir(), p.Number, nil, Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if v, err := s.Client.Text("PING"); err != nil || v != "PONG" {
		t.Fatalf("PING on the held port: %q, %v", v, err)
	}
}

// Webdis binds a port of its own and the address its log names is where
// it answers.
func TestRunWebdis(t *testing.T) {
	s := Start(t)
	addr := StartWebdis(t, s.Addr)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("webdis at %s: %v", addr, err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("GET /FCALL HTTP/1.0\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 64)
	n, _ := c.Read(b)
	if !strings.HasPrefix(string(b[:n]), "HTTP/1.") {
		t.Fatalf("webdis at %s answered %q", addr, b[:n])
	}
}
