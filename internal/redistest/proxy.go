package redistest

import (
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// Proxy is a TCP "Redis" in front of a real one, for fault and
// observation tests. It reads each command, then either answers it with a
// canned reply of its own, or forwards it (through the rewrite function,
// if one is set) on a connection of its own to the upstream and relays
// exactly one reply. Tests switch modes while traffic flows; a client's
// connection sees the change at its next command.
type Proxy struct {
	// Addr is where the proxy listens, "127.0.0.1:port".
	Addr string
	// Canned counts commands answered with the canned reply; Rewritten,
	// those the rewrite function changed.
	Canned, Rewritten atomic.Int64
	// CannedACL counts the canned replies that answered an ACL command
	// (the Higress build's WHOAMI), which no decision waits for.
	CannedACL atomic.Int64

	upstream string
	mu       sync.Mutex
	canned   []byte
	rewrite  func(args []string) bool
	observe  func(args []string, reply []byte)
	stall    chan struct{} // while open, commands wait
}

// StartProxy starts a Proxy in front of the Redis at upstream and stops it
// when the test ends, after every connection it served has closed.
func StartProxy(t testing.TB, upstream string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String(), upstream: upstream}
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	var conns sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		p.SetStall(false)
		mu.Lock()
		for c := range open {
			c.Close()
		}
		mu.Unlock()
		conns.Wait()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open[c] = true
			mu.Unlock()
			conns.Add(1)
			go func() {
				defer conns.Done()
				p.serve(c)
				mu.Lock()
				delete(open, c)
				mu.Unlock()
			}()
		}
	}()
	return p
}

// SetCanned makes the proxy answer every command with reply (any bytes,
// valid RESP or not) instead of forwarding it; nil forwards again.
func (p *Proxy) SetCanned(reply []byte) { p.mu.Lock(); p.canned = reply; p.mu.Unlock() }

// SetStall(true) makes the proxy hold every command it reads, answering
// nothing, as a stalled Redis would; SetStall(false) lets the held ones
// through (to clients still connected).
func (p *Proxy) SetStall(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case on && p.stall == nil:
		p.stall = make(chan struct{})
	case !on && p.stall != nil:
		close(p.stall)
		p.stall = nil
	}
}

// SetRewrite makes the proxy pass each command's arguments to f before
// forwarding them; f may change them in place, and reports whether it did.
// nil forwards commands unchanged.
func (p *Proxy) SetRewrite(f func(args []string) bool) { p.mu.Lock(); p.rewrite = f; p.mu.Unlock() }

// SetObserve makes the proxy call f with every command it forwards (as
// forwarded) and the raw reply it relays, from the goroutine serving that
// client connection, before the reply goes out. f must not keep reply.
func (p *Proxy) SetObserve(f func(args []string, reply []byte)) {
	p.mu.Lock()
	p.observe = f
	p.mu.Unlock()
}

// serve handles one client connection until either side closes or errs.
func (p *Proxy) serve(c net.Conn) {
	defer c.Close()
	var up *Conn
	defer func() {
		if up != nil {
			up.Close()
		}
	}()
	in := NewScanner(c)
	var cmd []byte
	for in.Scan() {
		v, _, err := redisproto.Decode(in.Bytes())
		if err != nil {
			return
		}
		args := make([]string, len(v.Elems))
		for i, e := range v.Elems {
			args[i] = string(e.Str)
		}
		p.mu.Lock()
		canned, rewrite, observe, stall := p.canned, p.rewrite, p.observe, p.stall
		p.mu.Unlock()
		if stall != nil {
			<-stall
		}
		if canned != nil {
			p.Canned.Add(1)
			if len(args) > 0 && strings.EqualFold(args[0], "ACL") {
				p.CannedACL.Add(1)
			}
			if _, err := c.Write(canned); err != nil {
				return
			}
			continue
		}
		if rewrite != nil && rewrite(args) {
			p.Rewritten.Add(1)
		}
		if up == nil {
			if up, err = Dial(p.upstream); err != nil {
				return
			}
		}
		cmd = redisproto.AppendCommand(cmd[:0], args...)
		reply, err := up.RoundTrip(cmd)
		if err != nil {
			return
		}
		if observe != nil {
			observe(args, reply)
		}
		if _, err := c.Write(reply); err != nil {
			return
		}
	}
}
