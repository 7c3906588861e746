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

// maxIdleRedisConns is how many idle connections a pool keeps.
const maxIdleRedisConns = 8

// redisPool is a connection pool to one Redis server, for the cluster
// proxy's calls to the nodes. Each call holds a connection for exactly one
// request and one reply (two with ASKING). A connection that saw an error
// or a timeout is closed, never reused.
type redisPool struct {
	addr    string
	timeout time.Duration

	mu     sync.Mutex
	idle   []*redisConn
	closed bool
}

func newRedisPool(addr string, timeout time.Duration) *redisPool {
	return &redisPool{addr: addr, timeout: timeout}
}

// do sends one query and returns the raw reply. With asking, it first sends
// ASKING on the same connection, as a client must after an -ASK
// redirection. The call, dialing included, ends at the pool's timeout or at
// ctx's deadline, whichever comes first.
func (c *redisPool) do(ctx context.Context, query []byte, asking bool) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	conn, err := c.get(ctx, deadline)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { conn.c.SetDeadline(time.Unix(1, 0)) })
	if asking {
		err = conn.expectOK(respCommand("ASKING"), deadline)
	}
	var reply []byte
	if err == nil {
		reply, err = conn.roundTrip(query, deadline)
	}
	if !stop() || err != nil {
		conn.close()
		if err == nil {
			err = ctx.Err()
		}
		return nil, err
	}
	c.put(conn)
	return reply, nil
}

func (c *redisPool) get(ctx context.Context, deadline time.Time) (*redisConn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errors.New("redis client closed")
	}
	if n := len(c.idle); n > 0 {
		conn := c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		return conn, nil
	}
	c.mu.Unlock()
	return c.dial(ctx, deadline)
}

func (c *redisPool) put(conn *redisConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || len(c.idle) >= maxIdleRedisConns {
		conn.close()
		return
	}
	c.idle = append(c.idle, conn)
}

// close closes the idle connections; busy ones are closed when their call
// ends.
func (c *redisPool) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, conn := range c.idle {
		conn.close()
	}
	c.idle = nil
}

func (c *redisPool) dial(ctx context.Context, deadline time.Time) (*redisConn, error) {
	d := net.Dialer{Deadline: deadline}
	nc, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, err
	}
	return &redisConn{c: nc}, nil
}

// respCommand encodes a command as a RESP array of bulk strings.
func respCommand(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, "\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}

type redisConn struct {
	c   net.Conn
	buf []byte
}

func (r *redisConn) close() { r.c.Close() }

func (r *redisConn) expectOK(cmd []byte, deadline time.Time) error {
	reply, err := r.roundTrip(cmd, deadline)
	if err != nil {
		return err
	}
	if len(reply) == 0 || reply[0] != '+' {
		return fmt.Errorf("server replied %q", strings.TrimSpace(string(reply)))
	}
	return nil
}

// roundTrip writes query and reads exactly one reply. Bytes after the reply
// mean the connection is out of step, which is an error.
func (r *redisConn) roundTrip(query []byte, deadline time.Time) ([]byte, error) {
	if err := r.c.SetDeadline(deadline); err != nil {
		return nil, err
	}
	if _, err := r.c.Write(query); err != nil {
		return nil, err
	}
	r.buf = r.buf[:0]
	chunk := make([]byte, 4096)
	for {
		n, err := respFrameLen(r.buf)
		switch {
		case err == nil && n == len(r.buf):
			return append([]byte(nil), r.buf...), nil
		case err == nil:
			return nil, fmt.Errorf("redis: %d unexpected bytes after the reply", len(r.buf)-n)
		case !errors.Is(err, errIncomplete):
			return nil, err
		case len(r.buf) > respMaxReply:
			return nil, fmt.Errorf("redis: reply larger than %d bytes", respMaxReply)
		}
		m, err := r.c.Read(chunk)
		r.buf = append(r.buf, chunk[:m]...)
		if err != nil && m == 0 {
			return nil, err
		}
	}
}
