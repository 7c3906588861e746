package deploy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms/lua"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// webdisConfig is Webdis's JSON configuration: every key Webdis 0.1.23 reads
// (src/conf.c). Webdis ignores keys it does not know, so a misspelt one
// would silently fall back to a default; decoding refuses them instead.
type webdisConfig struct {
	RedisHost          string          `json:"redis_host"`
	RedisPort          int             `json:"redis_port"`
	RedisAuth          json.RawMessage `json:"redis_auth"`
	RedisSNI           string          `json:"redis_sni"`
	HTTPHost           string          `json:"http_host"`
	HTTPPort           int             `json:"http_port"`
	HTTPMaxRequestSize int             `json:"http_max_request_size"`
	Threads            int             `json:"threads"`
	PoolSize           int             `json:"pool_size"`
	Daemonize          bool            `json:"daemonize"`
	Pidfile            string          `json:"pidfile"`
	Websockets         bool            `json:"websockets"`
	Database           int             `json:"database"`
	ACL                []webdisACL     `json:"acl"`
	User               string          `json:"user"`
	Group              string          `json:"group"`
	DefaultRoot        string          `json:"default_root"`
	Verbosity          int             `json:"verbosity"`
	Logfile            string          `json:"logfile"`
	LogFsync           json.RawMessage `json:"log_fsync"`
	Hiredis            json.RawMessage `json:"hiredis"`
	SSL                json.RawMessage `json:"ssl"`
}

type webdisACL struct {
	HTTPBasicAuth string   `json:"http_basic_auth"`
	IP            string   `json:"ip"`
	Enabled       []string `json:"enabled"`
	Disabled      []string `json:"disabled"`
}

// checkWebdisConfig checks a Webdis configuration against the filter's:
// Webdis runs in the foreground, refuses every command by default, and
// allows exactly FCALL to the filter's basic-auth credentials. (Webdis
// matches by prefix: EVALSHA would let EVAL through, FCALL lets nothing
// else through.)
func checkWebdisConfig(t *testing.T, where string, data []byte, cfg *config.Config) webdisConfig {
	t.Helper()
	return checkWebdisEnables(t, where, data, cfg, "FCALL")
}

// checkWebdisEnables is checkWebdisConfig for a Webdis that enables
// exactly the commands enabled (sorted): with redis.nodes, FCALL and
// CLUSTER, whose prefix match lets every CLUSTER subcommand through to
// Redis, where the ACL allows only CLUSTER NODES (acl_cluster_test.go).
func checkWebdisEnables(t *testing.T, where string, data []byte, cfg *config.Config, enabled ...string) webdisConfig {
	t.Helper()
	w := decodeWebdis(t, data)
	if w.Daemonize {
		t.Errorf("%s: daemonize must be false in a container", where)
	}
	if w.Database != 0 {
		t.Errorf("%s: database %d; the filter's keys are in the database Webdis selects: keep 0 unless you mean it", where, w.Database)
	}
	if len(w.ACL) != 2 || !slices.Equal(w.ACL[0].Disabled, []string{"*"}) || w.ACL[0].HTTPBasicAuth != "" ||
		w.ACL[0].IP != "" || len(w.ACL[0].Enabled) != 0 {
		t.Fatalf("%s: acl %+v: want first {\"disabled\": [\"*\"]}, then one entry for the filter", where, w.ACL)
	}
	allow := w.ACL[1]
	if got := slices.Sorted(slices.Values(allow.Enabled)); !slices.Equal(got, enabled) || len(allow.Disabled) != 0 {
		t.Errorf("%s: acl enables %v, want exactly %v", where, allow.Enabled, enabled)
	}
	if want := cfg.Redis.Username + ":" + cfg.Redis.Password; allow.HTTPBasicAuth != want || cfg.Redis.Password == "" {
		t.Errorf("%s: http_basic_auth %q, but the filter sends %q", where, allow.HTTPBasicAuth, want)
	}
	return w
}

// decodeWebdis decodes a Webdis configuration, refusing unknown keys.
func decodeWebdis(t *testing.T, data []byte) webdisConfig {
	t.Helper()
	var w webdisConfig
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		t.Fatalf("webdis configuration: %v", err)
	}
	return w
}

// redisAuth is Webdis's redis_auth as a password, "" when unset.
func (w webdisConfig) redisAuth(t *testing.T) string {
	t.Helper()
	if len(w.RedisAuth) == 0 || string(w.RedisAuth) == "null" {
		return ""
	}
	var s string
	if err := json.Unmarshal(w.RedisAuth, &s); err != nil {
		t.Fatalf("redis_auth: want a password string: %v", err)
	}
	return s
}

// deploy/webdis/local.json, the README's local run of envoy.yaml: in
// front of the local redis-server (no password, as the quick start starts
// it), listening on loopback only, at the address envoy.yaml's webdis
// cluster is given on the command line.
func TestLocalWebdisConfig(t *testing.T) {
	data, err := os.ReadFile(repoPath("deploy/webdis/local.json"))
	if err != nil {
		t.Fatal(err)
	}
	w := decodeWebdis(t, data)
	if w.HTTPHost != "127.0.0.1" || w.HTTPPort != 7379 {
		t.Errorf("http %s:%d, want 127.0.0.1:7379: loopback only, where the README's -http-cluster points", w.HTTPHost, w.HTTPPort)
	}
	if w.RedisHost != "127.0.0.1" || w.RedisPort != 6379 || w.redisAuth(t) != "" {
		t.Errorf("redis %s:%d (auth %q), want the quick start's 127.0.0.1:6379 without a password", w.RedisHost, w.RedisPort, w.redisAuth(t))
	}
}

// The Webdis configurations, run by a real webdis in front of a real Redis
// with the password they send: the filter's calls go through, with the
// filter's credentials only, and every other command is refused.
func TestWebdisConfigsRestrictCommands(t *testing.T) {
	b, _ := envoyBootstrap(t)
	_, _, envoyCfg := envoyPlugin(t, b)
	composeJSON, err := os.ReadFile(repoPath("deploy/compose/webdis.json"))
	if err != nil {
		t.Fatal(err)
	}
	localJSON, err := os.ReadFile(repoPath("deploy/webdis/local.json"))
	if err != nil {
		t.Fatal(err)
	}
	istioCfg := parsePluginConfig(t, IstioWasmPlugin, pluginConfigOf(t, IstioWasmPlugin))
	istioSecret := decodeObject(t, findDoc(t, istioDocs(t), "Secret", "webdis"), nil)
	for name, c := range map[string]struct {
		webdis []byte
		cfg    *config.Config
	}{
		"compose": {composeJSON, envoyCfg},
		"local":   {localJSON, envoyCfg},
		"istio":   {[]byte(istioSecret.StringData["webdis.json"]), istioCfg},
	} {
		t.Run(name, func(t *testing.T) {
			w := checkWebdisConfig(t, name, c.webdis, c.cfg)
			var args []string
			if pw := w.redisAuth(t); pw != "" {
				args = []string{"--requirepass", pw}
			}
			srv := redistest.Start(t, args...)
			epoch := "/FCALL/" + lua.Library.Epoch + "/1/rl%3Aepoch/e"
			base := "http://" + startWebdisConfig(t, c.webdis, srv.Addr)
			user, pass := c.cfg.Redis.Username, c.cfg.Redis.Password
			for _, tc := range []struct {
				method, path, body string
				user, pass         string
				want               int
			}{
				{"GET", epoch, "", user, pass, 200},
				{"POST", "/", epoch[1:], user, pass, 200},
				{"GET", "/FCALL/ratelimit_health/0", "", user, pass, 200}, // compose's healthcheck: an error, through
				{"GET", epoch, "", "", "", 403},
				{"GET", epoch, "", user, pass + "x", 403},
				{"GET", "/EVAL/return%2042/0", "", user, pass, 403},
				{"POST", "/", "EVALSHA/0000000000000000000000000000000000000000/0", user, pass, 403},
				{"GET", "/FUNCTION/LIST", "", user, pass, 403},
				{"GET", "/FCALL_RO/" + lua.Library.Epoch + "/1/rl%3Aepoch/e", "", user, pass, 403},
				{"GET", "/SELECT/1", "", user, pass, 403},
				{"POST", "/", "SET/k/v", user, pass, 403},
				{"GET", "/GET/k", "", user, pass, 403},
				{"GET", "/CONFIG/GET/requirepass", "", user, pass, 403},
				{"GET", "/FLUSHALL", "", user, pass, 403},
				{"GET", "/SCRIPT/FLUSH", "", user, pass, 403},
			} {
				req, _ := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
				if tc.user != "" {
					req.SetBasicAuth(tc.user, tc.pass)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.want {
					t.Errorf("%s %s %q as %q: %d %q, want %d", tc.method, tc.path, tc.body, tc.user, resp.StatusCode, body, tc.want)
				}
				if tc.want == 200 && strings.Contains(tc.path+tc.body, "_epoch") && string(body) != `{"FCALL":0}` {
					t.Errorf("FCALL of the epoch through Webdis: %q, want {\"FCALL\":0}", body)
				}
			}
		})
	}
}
