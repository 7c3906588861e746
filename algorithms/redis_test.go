package algorithms

import (
	"bufio"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// One redis-server for the package's tests; each test uses its own prefix.
var server *redistest.Server

func TestMain(m *testing.M) {
	var err error
	server, err = redistest.StartServer()
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	code := m.Run()
	printRatios()
	server.Stop()
	os.Exit(code)
}

// conn is a raw RESP connection: the same bytes the filter sends.
type conn struct {
	t   testing.TB
	c   net.Conn
	r   *bufio.Reader
	buf []byte
}

func dial(t testing.TB) *conn {
	t.Helper()
	c, err := net.Dial("tcp", server.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &conn{t: t, c: c, r: bufio.NewReader(c)}
}

// roundTrip sends cmd and returns the decoded reply.
func (c *conn) roundTrip(cmd []byte) redisproto.Value {
	c.t.Helper()
	c.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.c.Write(cmd); err != nil {
		c.t.Fatal(err)
	}
	c.buf = c.buf[:0]
	for {
		b, err := c.r.ReadByte()
		if err != nil {
			c.t.Fatal(err)
		}
		c.buf = append(c.buf, b)
		if c.r.Buffered() > 0 {
			more, _ := c.r.Peek(c.r.Buffered())
			c.buf = append(c.buf, more...)
			c.r.Discard(len(more))
		}
		v, n, err := redisproto.Decode(c.buf)
		if errors.Is(err, redisproto.ErrIncomplete) {
			continue
		}
		if err != nil {
			c.t.Fatal(err)
		}
		if n != len(c.buf) {
			c.t.Fatalf("reply has %d trailing bytes", len(c.buf)-n)
		}
		return v
	}
}

// decide runs the script, loading it on -NOSCRIPT, and parses the reply.
func (c *conn) decide(block string, checks []Check) Decision {
	c.t.Helper()
	d, err := c.tryDecide(block, checks)
	if err != nil {
		c.t.Fatal(err)
	}
	return d
}

func (c *conn) tryDecide(block string, checks []Check) (Decision, error) {
	var d Decision
	blocks := []string{block}
	v := c.roundTrip(AppendEvalSHA(nil, blocks, checks))
	var rerr *redisproto.Error
	if errors.As(v.Err(), &rerr) && rerr.Prefix() == "NOSCRIPT" {
		v = c.roundTrip(AppendEval(nil, blocks, checks))
	}
	err := d.Parse(v, 1, len(checks))
	return d, err
}

func (c *conn) do(args ...string) redisproto.Value {
	c.t.Helper()
	return c.roundTrip(redisproto.AppendCommand(nil, args...))
}

func mustLimit(t testing.TB) func(Limit, error) Limit {
	return func(l Limit, err error) Limit {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
}
