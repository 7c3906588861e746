package redistest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
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
// RunWebdis sets where it listens and logs.
func WebdisConfig(redisHost string, redisPort int, redisAuth string) map[string]any {
	cfg := map[string]any{
		"redis_host": redisHost, "redis_port": redisPort,
		"threads": 2, "daemonize": false, "database": 0, "verbosity": 3,
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
	host, portStr, _ := net.SplitHostPort(redisAddr)
	redisPort, _ := strconv.Atoi(portStr)
	wc := WebdisConfig(host, redisPort, redisAuth)
	wc["acl"].([]any)[1].(map[string]any)["http_basic_auth"] = user + ":" + password
	return RunWebdis(t, wc)
}

// webdisListening is the line Webdis logs (at verbosity 3 and above) once
// it listens, with the port it bound.
var webdisListening = regexp.MustCompile(`Webdis listening on port (\d+)`)

// RunWebdis runs webdis with the configuration conf on a loopback port it
// binds itself (http_port 0) and stops it when the test ends. It returns
// webdis's "host:port", read from its log (on its stdout, at verbosity 3
// or more), so no other server can hold that port. conf's http_host,
// http_port, logfile and a verbosity below 3 are overridden; everything
// else is as given.
func RunWebdis(t testing.TB, conf map[string]any) string {
	t.Helper()
	bin, err := exec.LookPath("webdis")
	if err != nil {
		t.Fatalf("redistest: webdis not found on PATH (apt-get install -y webdis): %v", err)
	}
	conf = maps.Clone(conf)
	conf["http_host"], conf["http_port"], conf["logfile"] = "127.0.0.1", 0, "/dev/stdout"
	if v, _ := strconv.ParseFloat(fmt.Sprint(conf["verbosity"]), 64); v < 3 {
		conf["verbosity"] = 3
	}
	file := filepath.Join(t.TempDir(), "webdis.json")
	b, err := json.Marshal(conf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	proc, m, err := StartProcess(exec.Command(bin, file), webdisListening)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proc.Kill)
	return "127.0.0.1:" + m[1]
}
