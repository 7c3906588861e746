package algorithms

import (
	"os"
	"reflect"
	"testing"

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
	server.Stop()
	os.Exit(code)
}

// conn is a raw RESP connection: the same bytes the filter sends.
type conn struct {
	t testing.TB
	c *redistest.Conn
	// old, when set, sends about half the library's calls through the
	// script of an older build instead (old_build_test.go).
	old *oldBuild
}

func dial(t testing.TB) *conn {
	t.Helper()
	c, err := redistest.Dial(server.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &conn{t: t, c: c, old: newOldBuild(t)}
}

// roundTrip sends cmd and returns the decoded reply (an error reply
// included), valid until the next call.
func (c *conn) roundTrip(cmd []byte) redisproto.Value {
	c.t.Helper()
	reply, err := c.send(cmd)
	if err != nil {
		c.t.Fatal(err)
	}
	v, _, err := redisproto.Decode(reply)
	if err != nil {
		c.t.Fatal(err)
	}
	return v
}

// decide runs the script, loading it on -NOSCRIPT, and parses the reply;
// an empty block means a call without block keys.
func (c *conn) decide(block string, checks []Check) Decision {
	c.t.Helper()
	d, err := c.tryDecide(block, checks)
	if err != nil {
		c.t.Fatal(err)
	}
	return d
}

func (c *conn) tryDecide(block string, checks []Check) (Decision, error) {
	c.t.Helper()
	var d Decision
	var blocks []string
	if block != "" {
		blocks = []string{block}
	}
	v := c.roundTrip(AppendFCall(nil, blocks, checks))
	err := d.Parse(v, len(blocks), len(checks))
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

// settle runs a settle call, loading the script on -NOSCRIPT, and parses
// the reply with ParseRESP and with Parse, which must agree.
func (c *conn) settle(settles []Settle) Settlement {
	c.t.Helper()
	raw, err := c.send(AppendSettle(nil, RESP, FCall, settles))
	if err != nil {
		c.t.Fatal(err)
	}
	var flat, full Settlement
	ok, errFlat := flat.ParseRESP(raw, len(settles))
	v, _, err := redisproto.Decode(raw)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := full.Parse(v, len(settles)); err != nil {
		c.t.Fatalf("settle %+v: %v", settles, err)
	}
	if !ok || errFlat != nil || !reflect.DeepEqual(flat, full) {
		c.t.Fatalf("ParseRESP %+v, %v, %v; Parse %+v", flat, ok, errFlat, full)
	}
	return full
}
