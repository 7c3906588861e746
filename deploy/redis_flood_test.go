package deploy

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/algorithms/lua"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// floodMaxmemory is the test's maxmemory: 64 MiB, in which a few clients'
// buffers would be enough to fill Redis.
const floodMaxmemory = 64 << 20

// A flood is connections under the filter's credential, each sending
// bytes it never finishes, or commands whose replies it never reads.
type flood struct {
	name  string
	conns int
	// payload is what one connection sends after AUTH.
	payload func(i int) []byte
	// full reports whether Redis holds all a connection sent: its
	// CLIENT LIST fields, and the bytes it sent.
	full func(f map[string]string, sent int) bool
}

// holdsSent: the client's memory holds what it sent (a bulk string's
// buffer is allocated whole once its length is read).
func holdsSent(f map[string]string, sent int) bool { return atoi(f["tot-mem"]) >= sent }

func halfSentSet(bulk int) func(int) []byte {
	return func(i int) []byte {
		head := fmt.Sprintf("*3\r\n$3\r\nSET\r\n$%d\r\nrl:{flood}:%d\r\n$%d\r\n", len(strconv.Itoa(i))+11, i, bulk)
		return append([]byte(head), make([]byte, bulk-1024)...)
	}
}

var floods = []flood{
	// The attack of issue 29: a half-sent 4 MiB SET on each of 20
	// connections.
	{"20 half-sent SETs of 4 MiB", 20, halfSentSet(4 << 20), holdsSent},
	// The largest bulk string proto-max-bulk-len lets in, on 80.
	{"80 half-sent SETs of 1 MiB", 80, halfSentSet(1<<20 - 64), holdsSent},
	// One command whose 24 arguments of 1 MiB each are complete: Redis
	// parses them all before it looks up the command.
	{"4 commands of 24 arguments of 1 MiB", 4, func(int) []byte {
		b := []byte("*100\r\n$3\r\nSET\r\n")
		for range 24 {
			b = append(b, fmt.Sprintf("$%d\r\n", 1<<20-64)...)
			b = append(append(b, make([]byte, 1<<20-64)...), "\r\n"...)
		}
		return b
	}, holdsSent},
	// 128 GETs of a 512 KiB value, pipelined, whose replies are never
	// read: 64 MiB of output.
	{"128 unread GETs of 512 KiB", 2, func(int) []byte {
		return []byte(strings.Repeat(string(redistest.AppendArgs(nil, "GET", "rl:{flood}:big")), 128))
	}, func(f map[string]string, _ int) bool { return f["qbuf"] == "0" && f["cmd"] == "get" }},
}

// redis/redis.conf bounds what clients hold: under the filter's own
// credential, no flood of half-sent arguments or unread replies brings
// Redis to maxmemory. Each flood is held open while the filter's user
// decides, which must succeed (on b8f0dfd's redis.conf, every one got
// -OOM, and failure_mode: allow admitted everything), with used memory
// under maxmemory.
func TestShippedRedisConfClientFlood(t *testing.T) {
	t.Parallel()
	s := startConfServer(t, renderUsers(t, "users.acl", filterUser.Password, operator.Password, "")+
		"user conf-reader on >"+confReader.Password+" resetchannels -@all +config|get +info +ping +client|list\n",
		"--maxmemory", strconv.Itoa(floodMaxmemory))
	reader := s.client(confReader)
	defer reader.Close()
	if got, err := reader.Strings("CONFIG", "GET", "client-output-buffer-limit"); err != nil || len(got) != 2 ||
		!strings.HasPrefix(got[1], "normal 16777216 0 0 ") {
		t.Errorf("CONFIG GET client-output-buffer-limit: %q (%v), want normal 16mb 0 0", got, err)
	}
	op := s.client(operator)
	defer op.Close()
	if err := redistest.LoadLibrary(op); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Do("SET", "rl:{flood}:big", strings.Repeat("x", 512<<10)); err != nil {
		t.Fatal(err)
	}
	for _, f := range floods {
		conns := make([]net.Conn, f.conns)
		sent := make([]int, f.conns)
		for i := range conns {
			conns[i], sent[i] = floodConn(t, s.addr, f.payload(i))
		}
		waitFlood(t, reader, f, conns, sent)
		mem := infoFields(t, reader, "memory", "stats")
		used := atoi(mem["used_memory"])
		err := decideOnce(s)
		open := 0
		for _, c := range conns {
			if clientFields(t, reader)[c.LocalAddr().String()] != nil {
				open++
			}
			c.Close()
		}
		t.Logf("%s: used_memory %d (maxmemory %d), clients %s, evicted_clients %s, %d of %d left open; decide: %v",
			f.name, used, floodMaxmemory, mem["mem_clients_normal"], mem["evicted_clients"], open, f.conns, err)
		if err != nil {
			t.Errorf("%s: the filter's decide failed: %v", f.name, err)
		}
		if used >= floodMaxmemory {
			t.Errorf("%s: used_memory %d reached maxmemory %d", f.name, used, floodMaxmemory)
		}
	}
}

// floodConn logs in as the filter's user and sends payload, as far as
// Redis lets it: it returns the connection, held open, and what it sent.
func floodConn(t *testing.T, addr string, payload []byte) (net.Conn, int) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(30 * time.Second))
	auth := redistest.AppendArgs(nil, "AUTH", filterUser.Username, filterUser.Password)
	if _, err := c.Write(auth); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Fatalf("AUTH: %q, %v", line, err)
	}
	n, _ := c.Write(payload) // an error is Redis closing it: a bound at work
	return c, n
}

// waitFlood waits until Redis has read every connection's bytes: each is
// closed, or holds all it sent.
func waitFlood(t *testing.T, reader *redistest.Client, f flood, conns []net.Conn, sent []int) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		clients, pending := clientFields(t, reader), 0
		for i, c := range conns {
			if fields := clients[c.LocalAddr().String()]; fields != nil && !f.full(fields, sent[i]) {
				pending++
			}
		}
		if pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d connections neither closed nor read whole", f.name, pending)
		}
	}
}

// clientFields is CLIENT LIST: each client's fields, by its address.
func clientFields(t *testing.T, reader *redistest.Client) map[string]map[string]string {
	t.Helper()
	list, err := reader.Text("CLIENT", "LIST")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		fields := map[string]string{}
		for _, kv := range strings.Fields(line) {
			k, v, _ := strings.Cut(kv, "=")
			fields[k] = v
		}
		out[fields["addr"]] = fields
	}
	return out
}

// infoFields is INFO of the sections, as field: value.
func infoFields(t *testing.T, reader *redistest.Client, sections ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, sec := range sections {
		info, err := reader.Text("INFO", sec)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				out[k] = v
			}
		}
	}
	return out
}

// decideOnce charges 1 of a sliding counter's 1000 as the filter's user,
// on a connection of its own.
func decideOnce(s *confServer) error {
	c := s.client(filterUser)
	defer c.Close()
	limit, _ := algorithms.NewSlidingCounter(1000, time.Hour)
	checks := []algorithms.Check{{Key: "rl:{flood|u}:0", Limit: limit, Cost: 1}}
	return c.With(func(conn *redistest.Conn) error {
		v, err := conn.Decode(conn.RoundTrip(algorithms.AppendFCall(nil, []string{"rl:{flood|u}:block"}, checks)))
		if err != nil {
			return err
		}
		var d algorithms.Decision
		if err := d.Parse(v, 1, 1); err != nil {
			return err
		}
		if !d.Allowed() {
			return fmt.Errorf("denied: %+v", d)
		}
		return nil
	})
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// The filter's user may write only with the commands users.acl grants it
// for the library (SET, HSET, ZADD, DEL, PEXPIRE, PEXPIREAT, ZREM,
// ZREMRANGEBYSCORE), on limit keys (rl:{...}:<n>), each argument under
// 1 MiB (proto-max-bulk-len, client-query-buffer-limit): every other
// write is refused, and so is a larger value. A value up to 1 MiB, kept without a TTL, is what is left
// (docs/redis.md, "What a stolen filter credential can do"). The largest
// argument the filter or ratelimitctl sends, the library's source, fits
// 16 times over.
func TestShippedRedisConfFilterWrites(t *testing.T) {
	t.Parallel()
	const maxBulk = 1 << 20
	if n := max(len(algorithms.Script.Source()), len(lua.Library.Source())); n*16 > maxBulk {
		t.Fatalf("the library's source is %d bytes: not 16 times under proto-max-bulk-len %d", n, maxBulk)
	}
	s := startConfServer(t, renderUsers(t, "users.acl", filterUser.Password, operator.Password, ""))
	filter := s.client(filterUser)
	defer filter.Close()
	op := s.client(operator)
	defer op.Close()
	const key = "rl:{writes}:0"
	for _, cmd := range [][]any{
		{"APPEND", key, "x"}, {"SETRANGE", key, "1000000", "x"}, {"SETEX", key, "10", "x"}, {"PSETEX", key, "10", "x"},
		{"SETNX", key, "x"}, {"MSET", key, "x"}, {"GETSET", key, "x"}, {"INCRBY", key, "1"}, {"INCRBYFLOAT", key, "1"},
		{"SETBIT", key, "8000000", "1"}, {"BITFIELD", key, "SET", "u8", "8000000", "1"}, {"LPUSH", key, "x"},
		{"SADD", key, "x"}, {"HSETNX", key, "f", "x"}, {"HINCRBY", key, "f", "1"}, {"ZINCRBY", key, "1", "x"},
		{"XADD", key, "*", "f", "x"}, {"PFADD", key, "x"}, {"GEOADD", key, "0", "0", "x"}, {"RESTORE", key, "0", "x"},
		{"COPY", "rl:{writes}:1", key}, {"RENAME", "rl:{writes}:1", key}, {"SUNIONSTORE", key, "rl:{writes}:1"},
		{"ZUNIONSTORE", key, "1", "rl:{writes}:1"}, {"MULTI"}, {"CLIENT", "NO-EVICT", "on"}, {"CLIENT", "KILL", "ID", "1"},
		{"CONFIG", "SET", "maxmemory-clients", "0"}, {"SET", "rl:{writes}:tier", "x"}, {"SET", "rl:writes", "x"},
	} {
		if _, err := filter.Do(cmd...); !isRedisError(err, "NOPERM") {
			t.Errorf("%q as ratelimit-filter: %v, want -NOPERM", cmd, err)
		}
	}
	big := strings.Repeat("x", maxBulk+1)
	// Each on a connection of its own: Redis closes it after its protocol
	// error.
	do := func(cmd ...any) error {
		c := s.client(filterUser)
		defer c.Close()
		_, err := c.Do(cmd...)
		return err
	}
	for _, cmd := range [][]any{{"SET", key, big}, {"HSET", key, "f", big}, {"ZADD", key, "1", big}} {
		if err := do(cmd...); err == nil {
			t.Errorf("%s of %d bytes as ratelimit-filter: accepted, want refused (proto-max-bulk-len)", cmd[0], len(big))
		}
		if v, err := op.Do("PTTL", key); err != nil || v != int64(-2) {
			t.Fatalf("after %s of %d bytes, PTTL %s: %v (%v), want -2 (no key)", cmd[0], len(big), key, v, err)
		}
	}
	// client-query-buffer-limit (1 MiB) counts the argument's framing too.
	if err := do("SET", key, big[:maxBulk-64]); err != nil {
		t.Fatalf("SET of %d bytes: %v, want it accepted: the bound, not a refusal", maxBulk-64, err)
	}
	if v, err := op.Do("PTTL", key); err != nil || v != int64(-1) {
		t.Fatalf("PTTL %s: %v (%v), want -1: a key the filter never writes, kept until deleted", key, v, err)
	}
}
