package redistest

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// ScanRESP splits a stream into whole values however the bytes arrive,
// tells a value cut short by the end of the stream from one that can never
// be valid, and ends cleanly between values.
func TestScanRESP(t *testing.T) {
	stream := "+OK\r\n:42\r\n$5\r\nhello\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n$-1\r\n" + "$70000\r\n" + strings.Repeat("x", 70000) + "\r\n"
	want := []string{"+OK\r\n", ":42\r\n", "$5\r\nhello\r\n", "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "$-1\r\n", "$70000\r\n" + strings.Repeat("x", 70000) + "\r\n"}
	for name, r := range map[string]io.Reader{
		"whole":           strings.NewReader(stream),
		"one byte a time": iotest.OneByteReader(strings.NewReader(stream)),
	} {
		sc := NewScanner(r)
		var got []string
		for sc.Scan() {
			got = append(got, sc.Text())
		}
		if sc.Err() != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %d values %.80q, err %v", name, len(got), got, sc.Err())
		}
	}
	for _, tc := range []struct {
		in   string
		want error
	}{
		{"$5\r\nhel", io.ErrUnexpectedEOF},
		{"*2\r\n:1\r\n", io.ErrUnexpectedEOF},
		{"hello\r\n", redisproto.ErrMalformed},
		{"+OK\r\n:x\r\n", redisproto.ErrMalformed},
	} {
		sc := NewScanner(strings.NewReader(tc.in))
		for sc.Scan() {
		}
		if !errors.Is(sc.Err(), tc.want) {
			t.Errorf("%q: %v, want %v", tc.in, sc.Err(), tc.want)
		}
	}
}

// Client runs commands on a real redis-server, with AUTH and SELECT on
// each connection, from several goroutines at once.
func TestClient(t *testing.T) {
	s := Start(t, "--requirepass", "pw")
	if _, err := NewClient(s.Addr, Options{}).Do("PING"); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Fatalf("PING without AUTH: %v", err)
	}
	db2 := NewClient(s.Addr, Options{Password: "pw", DB: 2})
	defer db2.Close()
	if _, err := db2.Do("SET", "k", 7); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Client.Int("EXISTS", "k"); err != nil || n != 0 {
		t.Fatalf("k in db 0: %d, %v", n, err)
	}
	done := make(chan error)
	for range 4 {
		go func() {
			n, err := db2.Int("INCR", "k")
			if err == nil && n <= 7 {
				err = errors.New("INCR did not count")
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if v, err := db2.Text("GET", "k"); v != "11" || err != nil {
		t.Fatalf("GET k: %q, %v", v, err)
	}
	if v, err := db2.Text("GET", "missing"); v != "" || err != nil {
		t.Fatalf("GET missing: %q, %v", v, err)
	}
	if v, err := db2.Do("RPUSH", "l", "a", 2.5, []byte("c")); v != int64(3) || err != nil {
		t.Fatalf("RPUSH: %v, %v", v, err)
	}
	if v, err := db2.Strings("LRANGE", "l", 0, -1); !slices.Equal(v, []string{"a", "2.5", "c"}) || err != nil {
		t.Fatalf("LRANGE: %q, %v", v, err)
	}
	var rerr *redisproto.Error
	if _, err := db2.Do("NOSUCHCOMMAND"); !errors.As(err, &rerr) || rerr.Prefix() != "ERR" {
		t.Fatalf("an error reply: %v", err)
	}
	if n, err := db2.Int("DBSIZE"); err != nil || n != 2 {
		t.Fatalf("the connection is usable after an error reply: %d, %v", n, err)
	}
}

// Proxy forwards, answers canned replies, rewrites and observes commands.
func TestProxy(t *testing.T) {
	s := Start(t)
	p := StartProxy(t, s.Addr)
	c := NewClient(p.Addr, Options{})
	defer c.Close()
	var seen []string
	p.SetObserve(func(args []string, reply []byte) { seen = append(seen, args[0]+" "+string(reply)) })
	if _, err := c.Do("SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	p.SetObserve(nil)
	p.SetRewrite(func(args []string) bool {
		if args[0] == "GET" {
			args[1] = "other"
			return true
		}
		return false
	})
	if v, err := c.Text("GET", "k"); v != "" || err != nil || p.Rewritten.Load() != 1 {
		t.Fatalf("rewritten GET: %q, %v, %d rewritten", v, err, p.Rewritten.Load())
	}
	p.SetRewrite(nil)
	p.SetCanned([]byte(":9\r\n"))
	if n, err := c.Int("GET", "k"); n != 9 || err != nil || p.Canned.Load() != 1 {
		t.Fatalf("canned: %d, %v", n, err)
	}
	p.SetCanned(nil)
	if v, err := c.Text("GET", "k"); v != "v" || err != nil {
		t.Fatalf("forwarded GET: %q, %v", v, err)
	}
	if len(seen) != 1 || seen[0] != "SET +OK\r\n" {
		t.Fatalf("observed %q", seen)
	}
}

// The server Start runs is ServerBinary: redis-server, or $REDIS_SERVER
// (make test runs a subset against valkey-server that way).
func TestStartRunsServerBinary(t *testing.T) {
	bin, err := ServerBinary()
	if err != nil {
		t.Fatal(err)
	}
	info, err := Start(t).Client.Text("INFO", "server")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, "\r\nexecutable:"+bin+"\r\n") {
		t.Fatalf("INFO server does not name %s as its executable:\n%s", bin, info)
	}
}
