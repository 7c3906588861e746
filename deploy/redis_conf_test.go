package deploy

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// What redis/redis.conf must set, as CONFIG GET answers: never evict
// (docs/redis.md), bounded client buffers and arguments
// (redis_flood_test.go), an append-only file fsynced every second, no RDB
// snapshots, protected mode, and no DEBUG, MODULE or protected configs.
var limiterConfig = map[string]string{
	"maxmemory":                 "1073741824",
	"maxmemory-policy":          "noeviction",
	"maxmemory-clients":         "10%",
	"proto-max-bulk-len":        "1048576",
	"client-query-buffer-limit": "1048576",
	"appendonly":                "yes",
	"appendfsync":               "everysec",
	"save":                      "",
	"protected-mode":            "yes",
	"enable-debug-command":      "no",
	"enable-module-command":     "no",
	"enable-protected-configs":  "no",
	"daemonize":                 "no",
}

// confServer is the server binary (redistest.ServerBinary) running
// redis/redis.conf in a directory of its own.
type confServer struct {
	t         *testing.T
	addr, dir string
	acl       string
	conf      string   // the file under the repository root; "" for deploy/redis/redis.conf
	args      []string // more overrides, such as a test's maxmemory
	proc      *redistest.Process
}

// start runs the server with redis/redis.conf, overriding only what
// differs on a test machine: port, bind (loopback), dir and aclfile, then
// args. It returns once the server logs that it accepts connections
// (after replaying its append-only file).
func (s *confServer) start() {
	t := s.t
	t.Helper()
	bin, err := redistest.ServerBinary()
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(s.addr, ":")
	conf := s.conf
	if conf == "" {
		conf = "deploy/redis/redis.conf"
	}
	args := append([]string{repoPath(conf),
		"--port", port, "--bind", "127.0.0.1", "--dir", s.dir, "--aclfile", s.acl}, s.args...)
	if s.proc, _, err = redistest.StartProcess(exec.Command(bin, args...), redistest.ServerReady); err != nil {
		t.Fatalf("%s: %v", conf, err)
	}
}

// stop sends SIGTERM, on which Redis writes its append-only file and
// exits, and waits.
func (s *confServer) stop() {
	if s.proc != nil {
		s.proc.Stop(syscall.SIGTERM)
	}
}

// log is the output of the server's last run.
func (s *confServer) log() string {
	if s.proc == nil {
		return ""
	}
	return s.proc.Output()
}

// The users the test logs in as: the two of users.acl, and a reader of
// CONFIG and INFO that only the test's copy of the ACL file has.
var (
	filterUser = redistest.Options{Username: "ratelimit-filter", Password: "filter-pw"}
	operator   = redistest.Options{Username: "ratelimit-operator", Password: "operator-pw"}
	confReader = redistest.Options{Username: "conf-reader", Password: "reader-pw"}
)

// startConfServer runs redis/redis.conf with acl as its ACL file, and
// args overriding it, on a port held for it (redistest.HoldPort) in a
// directory of its own, until the test ends.
func startConfServer(t *testing.T, acl string, args ...string) *confServer {
	t.Helper()
	s := &confServer{t: t, addr: redistest.HoldPort(t).Addr(), dir: t.TempDir(), args: args}
	s.acl = filepath.Join(s.dir, "users.acl")
	if err := os.WriteFile(s.acl, []byte(acl), 0o600); err != nil {
		t.Fatal(err)
	}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *confServer) client(o redistest.Options) *redistest.Client {
	return redistest.NewClient(s.addr, o)
}

// redis/redis.conf runs as shipped, with users.acl rendered: each setting
// a limiter needs is in force, the default user is off, the operator loads
// the library and the filter's user decides; a restart (SIGTERM, then the
// same dir) keeps what was charged, from the append-only file. The file
// holds a function's writes as MULTI ... EXEC, which Redis 7.0 and
// Valkey 8.0 (those tested here; fixed later by redis/redis#14545 and
// valkey-io/valkey#3984) replay checking the default user's rights at
// EXEC, dropping what they do not grant: users.acl's default, off and
// passwordless, holds every right for that.
func TestShippedRedisConf(t *testing.T) {
	t.Parallel()
	s := startConfServer(t, renderUsers(t, "users.acl", filterUser.Password, operator.Password, "")+
		"user conf-reader on >"+confReader.Password+" resetchannels -@all +config|get +info +ping\n")

	reader := s.client(confReader)
	defer reader.Close()
	for name, want := range limiterConfig {
		got, err := reader.Strings("CONFIG", "GET", name)
		if err != nil || len(got) != 2 || got[1] != want {
			t.Errorf("CONFIG GET %s: %q (%v), want %q", name, got, err, want)
		}
	}
	if got, err := reader.Strings("CONFIG", "GET", "aclfile"); err != nil || len(got) != 2 || got[1] != s.acl {
		t.Errorf("CONFIG GET aclfile: %q (%v), want the test's copy %s", got, err, s.acl)
	}
	if info, err := reader.Text("INFO", "persistence"); err != nil || !strings.Contains(info, "aof_enabled:1\r\n") {
		t.Errorf("INFO persistence: AOF not enabled (%v):\n%s", err, info)
	}
	anon := s.client(redistest.Options{})
	defer anon.Close()
	if _, err := anon.Do("PING"); !isRedisError(err, "NOAUTH") {
		t.Errorf("PING without AUTH: %v, want -NOAUTH (default is off)", err)
	}
	op := s.client(operator)
	defer op.Close()
	if _, err := op.Do("CONFIG", "GET", "maxmemory"); !isRedisError(err, "NOPERM") {
		t.Errorf("the operator's CONFIG GET: %v, want -NOPERM", err)
	}
	if err := redistest.LoadLibrary(op); err != nil {
		t.Fatal(err)
	}

	// The filter's user charges 3 of a sliding counter's 10.
	limit, _ := algorithms.NewSlidingCounter(10, time.Hour)
	checks := []algorithms.Check{{Key: "rl:{conf|u}:0", Limit: limit, Cost: 3}}
	remaining := func(o redistest.Options, cost int64) int64 {
		t.Helper()
		c := s.client(o)
		defer c.Close()
		checks[0].Cost = cost
		var d algorithms.Decision
		err := c.With(func(conn *redistest.Conn) error {
			v, err := conn.Decode(conn.RoundTrip(algorithms.AppendFCall(nil, []string{"rl:{conf|u}:block"}, checks)))
			if err == nil {
				err = d.Parse(v, 1, 1)
			}
			return err
		})
		if err != nil || !d.Allowed() {
			t.Fatalf("decide cost %d: %+v, %v", cost, d, err)
		}
		return d.Results[0].Remaining
	}
	if r := remaining(filterUser, 3); r != 7 {
		t.Fatalf("remaining %d after 3 of 10", r)
	}
	s.stop()
	s.start()
	if r := remaining(filterUser, 0); r != 7 {
		t.Fatalf("after a restart, remaining %d: want 7, kept by the append-only file", r)
	}
	s.stop()
	if strings.Contains(s.log(), "AOF-loading-client") {
		t.Fatalf("the append-only file was not replayed whole:\n%s", s.log())
	}
}

func isRedisError(err error, prefix string) bool {
	var rerr *redisproto.Error
	return errors.As(err, &rerr) && rerr.Prefix() == prefix
}

// clientBounds are redis/redis.conf's bounds on what connections hold
// (docs/redis.md, "Clients"), as redis-server's flags.
var clientBounds = [][2]string{{"--maxmemory-clients", "10%"}, {"--proto-max-bulk-len", "1mb"},
	{"--client-query-buffer-limit", "1mb"}, {"--client-output-buffer-limit", "normal 16mb 0 0"}}

// The Redis of the compose demo and of the Istio manifests, which start
// redis-server with flags rather than redis.conf, bound connections as
// redis.conf does.
func TestShippedRedisClientBounds(t *testing.T) {
	t.Parallel()
	conf, err := os.ReadFile(repoPath("deploy/redis/redis.conf"))
	if err != nil {
		t.Fatal(err)
	}
	var dep deploymentSpec
	decodeObject(t, findDoc(t, readYAML(t, "deploy/istio/redis.yaml"), "Deployment", "redis"), &dep)
	for _, b := range clientBounds {
		if !strings.Contains(string(conf), "\n"+b[0][2:]+" "+b[1]+"\n") {
			t.Errorf("redis.conf has no line %q", b[0][2:]+" "+b[1])
		}
		for where, args := range map[string][]string{"compose": readCompose(t).service(t, "redis").Command,
			"istio": dep.Template.Spec.Containers[0].Args} {
			if got := flagValue(t, args, b[0]); got != b[1] {
				t.Errorf("%s's redis: %s %q, want %q as in redis.conf", where, b[0], got, b[1])
			}
		}
	}
}
