// Package redistest is the Redis side of the tests: throwaway servers and
// one small client, on the stdlib, redisproto and the filter's library.
//
//   - Start runs a redis-server with persistence off (--save ""
//     --appendonly no) and the filter's Functions library loaded
//     (LoadLibrary), stopped by t.Cleanup; StartCluster a Redis Cluster of
//     masters, StartClusterWith one with replicas, an ACL, hostnames, and
//     slot migration and failover in steps (cluster_ops.go,
//     cluster_failover.go); NewProc a server a test can kill and restart on
//     one port; StartWebdis a Webdis in front of one, StartWebdisPerNode
//     one per cluster node.
//   - Ports are never picked free and let go (another package's server,
//     started at the same moment, could take them): a redis-server runs on
//     a Port this process holds, Webdis binds port 0 itself and logs its
//     port, and HoldPort is an address where nothing listens. A wait for a
//     server ends on its ready line or its exit (StartProcess).
//   - Conn speaks RESP to one server (ScanRESP, a bufio.SplitFunc, cuts the
//     replies), and Client runs commands from any goroutine; Server.Client
//     is an admin client.
//   - Proxy stands between a proxy and Redis to fault, observe or stall
//     the traffic.
//
// Tests never skip when redis-server is missing: they fail, because CI must
// run them. $REDIS_SERVER names another server binary to run instead, such
// as valkey-server (ServerBinary).
package redistest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// Server is a running redis-server owned by one test (or one test binary).
type Server struct {
	Addr string
	// Client is an admin client, authenticated with --requirepass if the
	// server was started with one.
	Client *Client
	proc   *Process
	port   *Port // held while the server runs
	// busPort is a cluster node's bus port, held likewise.
	busPort *Port
	dir     string
}

// Start runs redis-server with extra command-line arguments (e.g.
// "--requirepass", "secret") and stops it when the test ends.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	s, err := StartServer(args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StartServer is Start for callers without a testing.TB, such as TestMain
// or a benchmark binary. The caller must call Stop.
func StartServer(args ...string) (*Server, error) {
	bin, err := ServerBinary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redistest")
	if err != nil {
		return nil, err
	}
	s, err := launchHeld(bin, dir, args, Options{Password: passwordOf(args)}, true)
	if err != nil {
		os.RemoveAll(dir)
	}
	return s, err
}

// ServerBinary is the path of the server the tests run: $REDIS_SERVER
// when set (e.g. valkey-server, whose Functions, FCALL and ACL selectors
// are Redis 7's), else redis-server, looked up on PATH.
func ServerBinary() (string, error) {
	name := os.Getenv("REDIS_SERVER")
	if name == "" {
		name = "redis-server"
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("redistest: %s not found on PATH (make deps installs it): %w", name, err)
	}
	return bin, nil
}

// StartACL runs redis-server with an ACL file (--aclfile); see StartUsers.
func StartACL(t testing.TB, aclFile string, admin Options) *Server {
	t.Helper()
	abs, err := filepath.Abs(aclFile) // redis-server reads it from its --dir
	if err != nil {
		t.Fatal(err)
	}
	return StartUsers(t, admin, "--aclfile", abs)
}

// StartUsers is Start for a server whose default user may be off (args
// set its users): admin is the user the Server's Client logs in as. It
// does not load the filter's library: ratelimitctl install or LoadLibrary
// does, as admin.
func StartUsers(t testing.TB, admin Options, args ...string) *Server {
	t.Helper()
	bin, err := ServerBinary()
	if err != nil {
		t.Fatal(err)
	}
	s, err := launchHeld(bin, t.TempDir(), args, admin, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// launchHeld runs a server on a port it holds (ReservePort) while the
// server runs, so no other server can be listening there.
func launchHeld(bin, dir string, extra []string, admin Options, load bool) (*Server, error) {
	port, err := ReservePort()
	if err != nil {
		return nil, err
	}
	s, err := launch(bin, dir, port.Number, extra, admin, load)
	if err != nil {
		port.Release()
		return nil, err
	}
	s.port = port
	return s, nil
}

// ServerReady is the line redis-server (and valkey-server) logs, at
// loglevel notice, once it listens: "Ready to accept connections" (then
// "tcp" since Redis 7.2), for StartProcess.
var ServerReady = regexp.MustCompile(`Ready to accept connections`)

// serverArgs are the arguments every server of this package runs with,
// before the caller's: loopback only, no persistence, its log on stdout
// at the level that shows ServerReady.
func serverArgs(port int, dir string) []string {
	return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--logfile", "", "--loglevel", "notice"}
}

// launch runs a server on port and waits for its ready line, which only
// a server that bound the port logs: one that could not bind exits, and
// the error holds its output. The caller holds the port, or no one does.
func launch(bin, dir string, port int, extra []string, admin Options, load bool) (*Server, error) {
	cmd := exec.Command(bin, append(serverArgs(port, dir), extra...)...)
	proc, _, err := StartProcess(cmd, ServerReady)
	if err != nil {
		return nil, err // its output names the port
	}
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), proc: proc, dir: dir}
	s.Client = NewClient(s.Addr, admin)
	if load {
		if err := LoadLibrary(s.Client); err != nil {
			s.Client.Close()
			proc.Kill()
			return nil, err
		}
	}
	return s, nil
}

func passwordOf(args []string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--requirepass" {
			return args[i+1]
		}
	}
	return ""
}

// Stop kills the server and removes its directory. It is safe to call twice.
func (s *Server) Stop() {
	if s.proc == nil {
		return
	}
	s.Client.Close()
	s.proc.Kill()
	for _, p := range []*Port{s.port, s.busPort} {
		if p != nil {
			p.Release()
		}
	}
	os.RemoveAll(s.dir)
	s.proc = nil
}

// Do runs one command with the admin client and returns its reply (see
// Client.Do).
func (s *Server) Do(args ...any) (any, error) { return s.Client.Do(args...) }

// CommandStat returns calls and usec_per_call of one command from
// INFO commandstats, e.g. CommandStat("evalsha").
func (s *Server) CommandStat(name string) (calls int64, usecPerCall float64, err error) {
	calls, usec, err := s.CommandUsec(name)
	if calls > 0 {
		usecPerCall = float64(usec) / float64(calls)
	}
	return calls, usecPerCall, err
}

// CommandUsec returns calls and total usec of one command from
// INFO commandstats.
func (s *Server) CommandUsec(name string) (calls, usec int64, err error) {
	info, err := s.Client.Text("INFO", "commandstats")
	if err != nil {
		return 0, 0, err
	}
	sc := bufio.NewScanner(strings.NewReader(info))
	prefix := "cmdstat_" + strings.ToLower(name) + ":"
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		for _, field := range strings.Split(line[len(prefix):], ",") {
			k, v, _ := strings.Cut(field, "=")
			switch k {
			case "calls":
				calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				usec, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		return calls, usec, nil
	}
	return 0, 0, nil
}

var prefixSeq atomic.Int64

// Prefix returns a short key prefix unique to this test, so tests share a
// server without FLUSHDB: "t<n>-<a few letters of the test name>:".
func Prefix(t testing.TB) string {
	var b strings.Builder
	for _, r := range strings.ToLower(t.Name()) {
		if b.Len() == 16 {
			break
		}
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
			b.WriteRune(r)
		}
	}
	return fmt.Sprintf("t%d-%s:", prefixSeq.Add(1), b.String())
}
