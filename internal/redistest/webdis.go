package redistest

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// WebdisUser and WebdisPassword are the basic-auth credentials of every
// Webdis this package starts.
const (
	WebdisUser     = "ratelimit"
	WebdisPassword = "s3cret"
)

// WebdisConfig is the Webdis configuration the README documents: every
// command disabled but FCALL, which the filter sends, behind basic auth.
// Webdis matches commands by prefix, so enabling FCALL alone refuses EVAL,
// EVALSHA, FUNCTION and FCALL_RO. redisAuth ("" for none) is the
// password of Redis's default user, the only one Webdis can log in as.
func WebdisConfig(redisHost string, redisPort, httpPort int, redisAuth, logfile string) map[string]any {
	cfg := map[string]any{
		"redis_host": redisHost, "redis_port": redisPort,
		"http_host": "127.0.0.1", "http_port": httpPort,
		"threads": 2, "daemonize": false, "database": 0, "verbosity": 3, "logfile": logfile,
		"acl": []any{
			map[string]any{"disabled": []string{"*"}},
			map[string]any{"http_basic_auth": WebdisUser + ":" + WebdisPassword, "enabled": []string{"FCALL"}},
		},
	}
	if redisAuth != "" {
		cfg["redis_auth"] = redisAuth
	}
	return cfg
}

// StartWebdis runs webdis in front of the Redis at redisAddr and stops it
// when the test ends. It returns webdis's "host:port".
func StartWebdis(t testing.TB, redisAddr string) string {
	t.Helper()
	return StartWebdisAuth(t, redisAddr, "")
}

// StartWebdisAuth is StartWebdis for a Redis whose default user has the
// password redisAuth.
func StartWebdisAuth(t testing.TB, redisAddr, redisAuth string) string {
	t.Helper()
	return startWebdis(t, redisAddr, redisAuth, WebdisUser, WebdisPassword)
}

// StartWebdisUser is StartWebdis with other basic-auth credentials, such
// as a shipped configuration's.
func StartWebdisUser(t testing.TB, redisAddr, user, password string) string {
	t.Helper()
	return startWebdis(t, redisAddr, "", user, password)
}

func startWebdis(t testing.TB, redisAddr, redisAuth, user, password string) string {
	t.Helper()
	bin, err := exec.LookPath("webdis")
	if err != nil {
		t.Fatalf("redistest: webdis not found on PATH (apt-get install -y webdis): %v", err)
	}
	host, portStr, _ := net.SplitHostPort(redisAddr)
	redisPort, _ := strconv.Atoi(portStr)
	dir := t.TempDir()
	for attempt := 0; attempt < 5; attempt++ {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		wc := WebdisConfig(host, redisPort, port, redisAuth, filepath.Join(dir, "webdis.log"))
		wc["acl"].([]any)[1].(map[string]any)["http_basic_auth"] = user + ":" + password
		cfg, _ := json.Marshal(wc)
		file := filepath.Join(dir, "webdis.json")
		if err := os.WriteFile(file, cfg, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, file)
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		if waitListening(addr, cmd) {
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			return addr
		}
		cmd.Process.Kill()
		cmd.Wait()
	}
	t.Fatal("redistest: webdis did not start")
	return ""
}

func waitListening(addr string, cmd *exec.Cmd) bool {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			c.Close()
			return true
		}
		if cmd.ProcessState != nil {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}
