package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// ScanRESP is a bufio.SplitFunc that splits a byte stream into whole RESP
// values: Redis replies, or commands (arrays of bulk strings). Each token
// is one value, as redisproto decodes it. It asks for more data while the
// input is a proper prefix of a value, and fails on input that can never
// become one (redisproto.ErrMalformed) or that ends in the middle of a
// value (io.ErrUnexpectedEOF).
func ScanRESP(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if len(data) == 0 {
		return 0, nil, nil // at EOF: a clean end between values
	}
	_, n, err := redisproto.Decode(data)
	switch {
	case err == nil:
		return n, data[:n], nil
	case !errors.Is(err, redisproto.ErrIncomplete):
		return 0, nil, err
	case atEOF:
		return 0, nil, io.ErrUnexpectedEOF
	}
	return 0, nil, nil
}

// maxReply bounds one reply, as Redis's proto-max-bulk-len bounds a bulk
// string.
const maxReply = 512 << 20

// NewScanner returns a Scanner that reads whole RESP values from r with
// ScanRESP.
func NewScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxReply)
	sc.Split(ScanRESP)
	return sc
}

// DefaultTimeout bounds each round trip of a Conn whose Timeout is zero.
// It guards against a hang, and is no statement about speed.
const DefaultTimeout = 30 * time.Second

// Conn is one RESP2 connection to Redis: a command goes out, one reply
// comes back. It is not safe for use by several goroutines at once; Client
// is.
type Conn struct {
	// Timeout bounds each round trip; zero means DefaultTimeout.
	Timeout time.Duration

	nc  net.Conn
	sc  *bufio.Scanner
	cmd []byte
	dec redisproto.Decoder
}

// Dial connects to the Redis at addr ("host:port").
func Dial(addr string) (*Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, DefaultTimeout)
	if err != nil {
		return nil, err
	}
	return &Conn{nc: nc, sc: NewScanner(nc)}, nil
}

// RoundTrip writes cmd, one or more encoded commands, and returns the raw
// bytes of the next reply. The reply is valid until the next call.
func (c *Conn) RoundTrip(cmd []byte) ([]byte, error) {
	timeout := c.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	c.nc.SetDeadline(time.Now().Add(timeout))
	if _, err := c.nc.Write(cmd); err != nil {
		return nil, err
	}
	return c.Next()
}

// Next reads the next reply without sending anything: the reply to a
// pipelined command, or a pushed message.
func (c *Conn) Next() ([]byte, error) {
	if c.sc.Scan() {
		return c.sc.Bytes(), nil
	}
	if err := c.sc.Err(); err != nil {
		return nil, err
	}
	return nil, io.EOF
}

// Do sends one command and returns its reply, decoded. The Value aliases
// the connection's buffer and is valid until the next call. A Redis error
// reply is returned as the Value and as an error (*redisproto.Error).
func (c *Conn) Do(args ...any) (redisproto.Value, error) {
	c.cmd = AppendArgs(c.cmd[:0], args...)
	return c.Decode(c.RoundTrip(c.cmd))
}

// Decode decodes a reply RoundTrip or Next returned, with Do's error rule.
func (c *Conn) Decode(reply []byte, err error) (redisproto.Value, error) {
	if err != nil {
		return redisproto.Value{}, err
	}
	v, _, err := c.dec.Decode(reply)
	if err != nil {
		return v, err
	}
	return v, v.Err()
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// SetDeadline sets the underlying connection's deadline, for a test that
// waits on Next itself.
func (c *Conn) SetDeadline(t time.Time) error { return c.nc.SetDeadline(t) }

// AppendArgs appends a command, an array of bulk strings, to dst. Each
// argument is a string, a []byte, an integer or a float64 (in the shortest
// form that reads back exactly); anything else is formatted with %v.
func AppendArgs(dst []byte, args ...any) []byte {
	dst = redisproto.AppendArrayLen(dst, len(args))
	for _, a := range args {
		switch a := a.(type) {
		case string:
			dst = redisproto.AppendBulkString(dst, a)
		case []byte:
			dst = redisproto.AppendBulk(dst, a)
		case int:
			dst = redisproto.AppendBulkInt(dst, int64(a))
		case int64:
			dst = redisproto.AppendBulkInt(dst, a)
		case uint32:
			dst = redisproto.AppendBulkInt(dst, int64(a))
		case float64:
			dst = redisproto.AppendBulkString(dst, strconv.FormatFloat(a, 'g', -1, 64))
		default:
			dst = redisproto.AppendBulkString(dst, fmt.Sprint(a))
		}
	}
	return dst
}
