package main

// The tests run the command through run, as main does, against real
// redis-servers (internal/redistest): one shared by the tests, each with
// its own key prefix, and a Redis Cluster in cluster_test.go.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redisrate/envoy-redis-ratelimit/filter"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

var server *redistest.Server

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{}) // as main does
	s, err := redistest.StartServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ratelimitctl:", err)
		os.Exit(1)
	}
	server = s
	code := m.Run()
	s.Stop()
	os.Exit(code)
}

// testRules are the rules most tests use:
//   - api: per user, a sliding log of 3 a minute and a funnel of 5.
//   - route: per user and path; a missing part is shared.
//   - open: per user under /open/, never blocked (manual_block: false).
//   - login: per client /24 on /login.
const testRules = `[
	{"name":"api","key":[{"source":"header","name":"x-user"}],
	 "limits":[{"name":"minute","algorithm":"sliding_log","limit":3,"window":"1m"},
	           {"name":"burst","algorithm":"funnel","capacity":5,"rate":1,"period":"1h"}]},
	{"name":"route","key":[{"source":"header","name":"x-user"},{"source":"path"}],"on_missing_key":"shared",
	 "limits":[{"algorithm":"sliding_counter","limit":10,"window":"1h"}]},
	{"name":"open","match":{"path_prefix":"/open/"},"key":[{"source":"header","name":"x-user"}],"manual_block":false,
	 "limits":[{"algorithm":"funnel","capacity":2,"rate":1,"period":"1h"}]},
	{"name":"login","match":{"path":"/login"},"key":[{"source":"client_ip","ipv4_prefix_len":24}],
	 "limits":[{"algorithm":"funnel","capacity":2,"rate":1,"period":"1h"}]}]`

// bothRules are testRules at the top level and tierRules in a _rules_
// entry: more limits than config.MaxRequestLimits allows in one
// configuration, and the tools find rules in either.
func bothRules(prefix string) string {
	return testRules + `,"_rules_":[{"_match_domain_":["*"],"redis":{"cluster":"redis","key_prefix":"` + prefix + `"},"rules":` + tierRules + `}]`
}

// env is one test's configuration file and Redis.
type env struct {
	t      *testing.T
	prefix string
	cfg    *config.Config
	config string   // the configuration file
	conn   []string // --redis and, for a cluster, --cluster
	do     func(key string, args ...any) (any, error)
}

// newEnv writes a configuration of rules with the test's own key prefix,
// for the shared server.
func newEnv(t *testing.T, rules string) *env {
	t.Helper()
	return newEnvOn(t, server, redistest.Prefix(t), rules)
}

func newEnvOn(t *testing.T, s *redistest.Server, prefix, rules string) *env {
	t.Helper()
	e := writeConfig(t, prefix, rules)
	e.conn = []string{"--redis", s.Addr}
	e.do = func(_ string, args ...any) (any, error) { return s.Do(args...) }
	return e
}

func writeConfig(t *testing.T, prefix, rules string) *env {
	t.Helper()
	data := fmt.Sprintf(`{"redis":{"cluster":"redis","key_prefix":%q},"rules":%s}`, prefix, rules)
	cfg, err := config.Parse([]byte(data))
	if err != nil {
		t.Fatalf("test configuration: %v", err)
	}
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, prefix: prefix, cfg: cfg, config: path}
}

// ctl runs ratelimitctl with the configuration and Redis flags, then args.
func (e *env) ctl(args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	args = append(append([]string{"--config", e.config}, e.conn...), args...)
	code = run(args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// ok runs ratelimitctl and fails the test unless it succeeds.
func (e *env) ok(args ...string) string {
	e.t.Helper()
	out, errOut, code := e.ctl(args...)
	if code != exitOK || errOut != "" {
		e.t.Fatalf("ratelimitctl %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
	}
	return out
}

// json runs ratelimitctl with --json and decodes its one document into v,
// a pointer, after zeroing what it points to.
func (e *env) json(v any, args ...string) {
	e.t.Helper()
	reflect.ValueOf(v).Elem().SetZero()
	out := e.ok(append(args, "--json")...)
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		e.t.Fatalf("ratelimitctl %s --json: %v in\n%s", strings.Join(args, " "), err, out)
	}
	if dec.More() {
		e.t.Fatalf("ratelimitctl %s --json: more than one document:\n%s", strings.Join(args, " "), out)
	}
}

// key is a rule's key for parts, as the filter builds it.
func (e *env) key(rule string, parts ...string) string {
	e.t.Helper()
	r, ok := e.cfg.Rule(rule)
	if !ok {
		e.t.Fatalf("no rule %s", rule)
	}
	k, err := keyspace.RuleKey(e.cfg, r, parts)
	if err != nil {
		e.t.Fatal(err)
	}
	return k
}

// get returns a key's value, "" when absent.
func (e *env) get(key string) string {
	e.t.Helper()
	v, err := e.do(key, "GET", key)
	if err != nil {
		e.t.Fatal(err)
	}
	s, _ := v.(string)
	return s
}

func (e *env) exists(key string) bool {
	e.t.Helper()
	v, err := e.do(key, "EXISTS", key)
	if err != nil {
		e.t.Fatal(err)
	}
	return v == int64(1)
}

func (e *env) set(key, value string, extra ...any) {
	e.t.Helper()
	if _, err := e.do(key, append([]any{"SET", key, value}, extra...)...); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) pttl(key string) int64 {
	e.t.Helper()
	v, err := e.do(key, "PTTL", key)
	if err != nil {
		e.t.Fatal(err)
	}
	return v.(int64)
}

// epoch is the epoch key's value, 0 before the first change.
func (e *env) epoch() int64 {
	e.t.Helper()
	var n int64
	if v := e.get(keyspace.EpochKey(e.prefix)); v != "" {
		fmt.Sscan(v, &n)
	}
	return n
}

// proxy runs the filter natively (filter.Plugin behind filtertest's fake
// proxy) against the shared server, so requests charge Redis exactly as the
// filter's own calls do.
type proxy struct {
	*filtertest.Host
	plugin *filter.Plugin
}

func newProxy(t *testing.T, e *env) *proxy {
	t.Helper()
	return newProxyOn(t, e, server.Addr)
}

// newProxyOn is newProxy against the Redis at addr.
func newProxyOn(t *testing.T, e *env, addr string) *proxy {
	t.Helper()
	p := &proxy{Host: filtertest.NewHost(addr)}
	p.Deliver = func(id uint32, ok bool, reply []byte) { p.plugin.OnRedisReply(id, ok, reply) }
	p.plugin = filter.NewPlugin(e.cfg, p)
	t.Cleanup(p.Close)
	return p
}

func (p *proxy) Log(filter.LogLevel, string)            {}
func (p *proxy) Counter(name string) filter.Counter     { return p.Metric(name) }
func (p *proxy) Histogram(name string) filter.Histogram { return p.Metric(name) }
func (p *proxy) Gauge(name string) filter.Gauge         { return p.Metric(name) }

// send makes one request for / with the given headers and returns its
// status.
func (p *proxy) send(t *testing.T, headers ...[2]string) int {
	t.Helper()
	return p.sendFrom(t, "127.0.0.1:40000", "/", headers...)
}

// sendFrom is send from a client address to a path.
func (p *proxy) sendFrom(t *testing.T, source, path string, headers ...[2]string) int {
	t.Helper()
	pairs := append([][2]string{{":method", "GET"}, {":path", path}, {":authority", "example.com"}}, headers...)
	s := filtertest.NewStream(source, nil)
	o, err := filtertest.Send(p.Host, s, p.plugin.NewStream(s), filter.Pause, pairs)
	if err != nil {
		t.Fatal(err)
	}
	return o.Status
}
