package wasmhost

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"
)

// clusterProxyTimeout bounds one routed command, map loading and retry
// included (redis_proxy's op_timeout).
const clusterProxyTimeout = 2 * time.Second

// clusterProxy stands for what a user puts between Higress's Redis client
// and a Redis Cluster: a cluster-aware proxy on loopback, such as Envoy's
// redis_proxy. It serves RESP on a loopback port, routes each command by
// its first key (redisCluster), and answers each connection's commands in
// order. Like redis_proxy without downstream_auth_password, it answers
// AUTH with an error and does not know SELECT (Higress throws both replies
// away), answers PING itself, and turns failures into error replies:
// "no upstream host" when no node can be chosen, "upstream failure" when
// the node's call failed (command_splitter_impl.h). Unlike redis_proxy, it
// forwards every other command.
type clusterProxy struct {
	h      *Host
	ln     net.Listener
	router *redisCluster
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]bool
}

// startClusterProxies starts a proxy per name of Config.RedisClusterProxy.
func (h *Host) startClusterProxies() error {
	for name, seeds := range h.cfg.RedisClusterProxy {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			h.stopClusterProxies()
			return fmt.Errorf("host: cluster proxy for %q: %w", name, err)
		}
		p := &clusterProxy{h: h, ln: ln, router: newRedisCluster(h, name, seeds, clusterProxyTimeout), conns: map[net.Conn]bool{}}
		p.ctx, p.cancel = context.WithCancel(context.Background())
		h.rs.mu.Lock()
		if h.rs.proxies == nil {
			h.rs.proxies = map[string]*clusterProxy{}
		}
		h.rs.proxies[name] = p
		h.rs.mu.Unlock()
		p.wg.Add(1)
		go p.accept()
	}
	return nil
}

func (h *Host) stopClusterProxies() {
	h.rs.mu.Lock()
	proxies := h.rs.proxies
	h.rs.proxies = nil
	h.rs.mu.Unlock()
	for _, p := range proxies {
		p.close()
	}
}

func (p *clusterProxy) addr() string { return p.ln.Addr().String() }

func (p *clusterProxy) close() {
	p.cancel()
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	p.router.close()
}

func (p *clusterProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns[c] = true
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve reads commands and answers them in order, each routed on its own
// goroutine so that a slow node does not hold up the reading.
func (p *clusterProxy) serve(c net.Conn) {
	defer p.wg.Done()
	replies := make(chan chan []byte, 1024)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for r := range replies {
			if _, err := c.Write(<-r); err != nil {
				c.Close()
			}
		}
	}()
	defer func() {
		close(replies)
		<-writerDone
		c.Close()
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
	}()
	var buf []byte
	chunk := make([]byte, 16<<10)
	for {
		n, err := c.Read(chunk)
		buf = append(buf, chunk[:n]...)
		for {
			end, ferr := respFrameLen(buf)
			if errors.Is(ferr, errIncomplete) {
				break
			}
			if ferr != nil {
				return
			}
			cmd := append([]byte(nil), buf[:end]...)
			buf = buf[end:]
			r := make(chan []byte, 1)
			replies <- r
			go func() { r <- p.handle(cmd) }()
		}
		if err != nil {
			return
		}
	}
}

// handle answers one command.
func (p *clusterProxy) handle(cmd []byte) []byte {
	args, err := respArgs(cmd)
	if err != nil || len(args) == 0 {
		return []byte("-invalid request\r\n")
	}
	switch strings.ToLower(string(args[0])) {
	case "auth":
		if len(args) == 3 {
			return []byte("-ERR Client sent AUTH, but no username-password pair is set\r\n")
		}
		return []byte("-ERR Client sent AUTH, but no password is set\r\n")
	case "ping":
		return []byte("+PONG\r\n")
	case "select":
		return []byte("-unsupported command '" + string(args[0]) + "'\r\n")
	}
	reply, err := p.router.do(p.ctx, cmd)
	if err != nil {
		p.h.hostLog(-1, LogWarn, "%v", err)
		if strings.Contains(err.Error(), "no slot map") {
			return []byte("-no upstream host\r\n")
		}
		return []byte("-upstream failure\r\n")
	}
	return reply
}
