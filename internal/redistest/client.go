package redistest

import (
	"errors"
	"fmt"
	"sync"

	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// Options says how a Client opens each connection.
type Options struct {
	// Username and Password are sent as AUTH when Password is set.
	Username, Password string
	// DB is SELECTed when it is not 0.
	DB int
}

// Client runs commands on one Redis, for tests: it is safe for use by
// several goroutines at once, keeping one idle connection per goroutine
// that used it concurrently. A connection that failed is dropped, and the
// next command dials anew.
type Client struct {
	addr string
	opts Options

	mu     sync.Mutex
	idle   []*Conn
	closed bool
}

// NewClient returns a Client for the Redis at addr. It dials lazily.
func NewClient(addr string, opts Options) *Client {
	return &Client{addr: addr, opts: opts}
}

// Addr is the address the client dials.
func (c *Client) Addr() string { return c.addr }

// Do runs one command and returns its reply as plain Go values: int64 for
// an integer, string for a simple or bulk string, nil for a null, []any for
// an array, float64 and bool for their RESP3 kinds. A Redis error reply is
// returned as the error (*redisproto.Error).
func (c *Client) Do(args ...any) (any, error) {
	var out any
	err := c.With(func(conn *Conn) error {
		v, err := conn.Do(args...)
		out = Plain(v)
		return err
	})
	return out, err
}

// Int runs a command whose reply is an integer.
func (c *Client) Int(args ...any) (int64, error) {
	var n int64
	err := c.With(func(conn *Conn) error {
		v, err := conn.Do(args...)
		if err == nil {
			n, err = v.Int64()
		}
		return err
	})
	return n, err
}

// Text runs a command whose reply is a string; a null reads as "".
func (c *Client) Text(args ...any) (string, error) {
	var s string
	err := c.With(func(conn *Conn) error {
		v, err := conn.Do(args...)
		if err == nil && !v.IsNull() {
			s, err = v.Text()
		}
		return err
	})
	return s, err
}

// Strings runs a command whose reply is an array of strings, such as KEYS.
func (c *Client) Strings(args ...any) ([]string, error) {
	var out []string
	err := c.With(func(conn *Conn) error {
		v, err := conn.Do(args...)
		if err != nil {
			return err
		}
		elems, err := v.Array()
		for _, e := range elems {
			s, err := e.Text()
			if err != nil {
				return err
			}
			out = append(out, s)
		}
		return err
	})
	return out, err
}

// With runs f on a connection of its own, for a few commands in a row or
// the raw bytes of a reply. A connection f fails with anything other than
// a Redis error reply is closed.
func (c *Client) With(f func(*Conn) error) error {
	conn, err := c.get()
	if err != nil {
		return err
	}
	err = f(conn)
	var reply *redisproto.Error
	if err == nil || errors.As(err, &reply) {
		c.put(conn)
	} else {
		conn.Close()
	}
	return err
}

func (c *Client) get() (*Conn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errors.New("redistest: client closed")
	}
	if n := len(c.idle); n > 0 {
		conn := c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		return conn, nil
	}
	c.mu.Unlock()
	conn, err := Dial(c.addr)
	if err != nil {
		return nil, err
	}
	if err := c.setUp(conn); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// setUp authenticates and selects the database on a new connection.
func (c *Client) setUp(conn *Conn) error {
	if c.opts.Password != "" {
		args := []any{"AUTH", c.opts.Password}
		if c.opts.Username != "" {
			args = []any{"AUTH", c.opts.Username, c.opts.Password}
		}
		if _, err := conn.Do(args...); err != nil {
			return fmt.Errorf("redistest: AUTH on %s: %w", c.addr, err)
		}
	}
	if c.opts.DB != 0 {
		if _, err := conn.Do("SELECT", c.opts.DB); err != nil {
			return fmt.Errorf("redistest: SELECT %d on %s: %w", c.opts.DB, c.addr, err)
		}
	}
	return nil
}

func (c *Client) put(conn *Conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		conn.Close()
		return
	}
	c.idle = append(c.idle, conn)
}

// Close closes the idle connections; commands after it fail.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, conn := range c.idle {
		conn.Close()
	}
	c.idle = nil
	return nil
}

// Plain converts a decoded reply to plain Go values, copying what it keeps
// (see Client.Do). An error reply converts to its message; a map to its
// flattened key, value pairs.
func Plain(v redisproto.Value) any {
	switch v.Kind {
	case redisproto.KindInteger:
		return v.Int
	case redisproto.KindDouble:
		return v.Float
	case redisproto.KindBool:
		return v.Int != 0
	case redisproto.KindNull:
		return nil
	case redisproto.KindArray, redisproto.KindSet, redisproto.KindPush, redisproto.KindMap:
		out := make([]any, len(v.Elems))
		for i, e := range v.Elems {
			out[i] = Plain(e)
		}
		return out
	}
	return string(v.Str)
}
