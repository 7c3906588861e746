package wasmhost

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
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
// forwards every other command, unless Config.RedisProxyFaithful is set
// (faithfulReply). It reloads the slot map every Config.RedisClusterRefresh
// and after a node's call fails (redis_cluster_refresh.go).
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
		p.router.refreshEvery(h.cfg.RedisClusterRefresh)
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
	if p.h.cfg.RedisProxyFaithful {
		if reply := faithfulReply(args, time.Now()); reply != nil {
			return reply
		}
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

// faithfulReply answers what redis_proxy answers itself, by its
// command_splitter_impl.cc (InstanceImpl::makeRequest and the handlers),
// and returns nil for a command to route: ECHO and TIME locally (TIME
// from the proxy's clock, not Redis's); a command of one word, but for
// PING and TIME, "invalid request"; a command outside redis_proxy's list
// (supported_commands.h) "unsupported command '<name as sent>'": FCALL,
// FCALL_RO, FUNCTION, SCRIPT, CLUSTER and INFO among them; an EVAL
// without a key "wrong number of arguments". MULTI, EXEC and DISCARD,
// which redis_proxy pins to one node, are refused as unsupported here
// (not modelled), and so is QUIT.
func faithfulReply(args [][]byte, now time.Time) []byte {
	name := strings.ToLower(string(args[0]))
	switch {
	case name == "echo":
		if len(args) != 2 {
			return []byte("-invalid request\r\n")
		}
		return respBulk(args[1])
	case name == "time":
		us := now.UnixMicro()
		sec := []byte(strconv.FormatInt(us/1e6, 10))
		return append(append([]byte("*2\r\n"), respBulk(sec)...), respBulk([]byte(strconv.FormatInt(us, 10)))...)
	case len(args) < 2:
		return []byte("-invalid request\r\n")
	case !proxySupported[name]:
		return []byte("-unsupported command '" + string(args[0]) + "'\r\n")
	case strings.HasPrefix(name, "eval") && len(args) < 4, name == "mset" && len(args)%2 == 0:
		return []byte("-wrong number of arguments for '" + string(args[0]) + "' command\r\n")
	}
	return nil
}

func respBulk(b []byte) []byte {
	return append(append([]byte("$"+strconv.Itoa(len(b))+"\r\n"), b...), "\r\n"...)
}

// proxySupported are the commands redis_proxy routes (Envoy's
// supported_commands.h: simple commands, EVAL and its kin, the multi-key
// ones it splits, MGET, MSET); the model routes each by its first key
// without splitting.
var proxySupported = map[string]bool{}

func init() {
	for _, c := range strings.Fields(`append bf.add bf.card bf.exists bf.info bf.insert bf.loadchunk bf.madd
		bf.mexists bf.reserve bf.scandump bitcount bitfield bitpos decr decrby dump expire expireat geoadd
		geodist geohash geopos georadius_ro georadiusbymember_ro get getbit getdel getrange getset hdel
		hexists hget hgetall hincrby hincrbyfloat hkeys hlen hmget hmset hscan hset hsetnx hstrlen hvals
		incr incrby incrbyfloat lindex linsert llen lmove lpop lpush lpushx lrange lrem lset ltrim persist
		pexpire pexpireat pfadd pfcount psetex pttl publish restore rpop rpush rpushx sadd scard set setbit
		setex setnx setrange sismember smembers spop srandmember srem sscan strlen ttl type watch xack xadd
		xautoclaim xclaim xdel xlen xpending xrange xrevrange xtrim zadd zcard zcount zincrby zlexcount
		zpopmin zpopmax zrange zrangebylex zrangebyscore zrank zrem zremrangebylex zremrangebyrank
		zremrangebyscore zrevrange zrevrangebylex zrevrangebyscore zrevrank zscan zscore
		eval evalsha eval_ro evalsha_ro del exists touch unlink mget mset`) {
		proxySupported[c] = true
	}
}
