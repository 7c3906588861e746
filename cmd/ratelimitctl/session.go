package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms/lua"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
)

// defaultRedis is where Redis is without --redis or $RATELIMITCTL_REDIS.
const defaultRedis = "127.0.0.1:6379"

// redisEnv holds Redis's address when --redis is not given, in the same
// form: host:port, comma-separated for a cluster's nodes.
const redisEnv = "RATELIMITCTL_REDIS"

// passwordEnv holds the password when --password is not given, so that it
// stays out of the process list and shell history.
const passwordEnv = "RATELIMITCTL_PASSWORD"

// globals are the flags every command takes.
type globals struct {
	config   string // "" for the commands that need none
	redis    addrList
	redisArg string // where redis came from, for errors: "--redis" or "$RATELIMITCTL_REDIS"
	cluster  bool
	username string
	password string
	db       int
	json     bool
}

// register adds the flags to fs. They may come before the command and
// after it, so each registration keeps the values parsed so far.
func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.config, "config", g.config, "the filter's plugin configuration, a JSON `file` (required but by install, libraries and uninstall)")
	fs.Var(&g.redis, "redis", "Redis `host:port`; repeatable or comma-separated, for a cluster's nodes (default $"+redisEnv+", else "+defaultRedis+")")
	fs.BoolVar(&g.cluster, "cluster", g.cluster, "Redis is a Redis Cluster; --redis names one or more of its nodes")
	fs.StringVar(&g.username, "username", g.username, "Redis ACL `user` (needs a password)")
	fs.StringVar(&g.password, "password", g.password, "Redis password (default $"+passwordEnv+")")
	fs.IntVar(&g.db, "db", g.db, "Redis database `number` (not with --cluster)")
	fs.BoolVar(&g.json, "json", g.json, "print one JSON document instead of text")
}

// check rejects what no configuration or server could make right.
func (g *globals) check(needConfig bool) error {
	if g.config == "" && needConfig {
		return usagef("--config: required: the filter's plugin configuration (JSON)")
	}
	g.redisArg = "--redis"
	if len(g.redis) == 0 {
		if env := os.Getenv(redisEnv); env != "" {
			g.redis.Set(env)
			g.redisArg = "$" + redisEnv
		}
	}
	if len(g.redis) == 0 {
		g.redis = addrList{defaultRedis}
	}
	for _, a := range g.redis {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			return usagef("%s %q: want host:port", g.redisArg, a)
		}
	}
	if len(g.redis) > 1 && !g.cluster {
		return usagef("%s: %d addresses need --cluster; a single server takes one", g.redisArg, len(g.redis))
	}
	if g.db < 0 {
		return usagef("--db %d: must be >= 0", g.db)
	}
	if g.db != 0 && g.cluster {
		return usagef("--db: a Redis Cluster has only database 0")
	}
	if g.password == "" {
		g.password = os.Getenv(passwordEnv)
	}
	if g.username != "" && g.password == "" {
		return usagef("--username: needs a password (--password or $%s)", passwordEnv)
	}
	return nil
}

// addrList is --redis: repeatable, each value comma-separated.
type addrList []string

func (a *addrList) String() string { return strings.Join(*a, ",") }

func (a *addrList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*a = append(*a, s)
		}
	}
	return nil
}

// session is what a command works with: the configuration and Redis.
type session struct {
	configPath string
	cfg        *config.Config
	prefix     string // cfg.Redis.Prefix
	rdb        redis.UniversalClient
	single     *redis.Client        // nil with --cluster
	cluster    *redis.ClusterClient // nil without
}

// open reads the configuration and connects to Redis, checking with a PING
// that it answers.
func (g *globals) open(ctx context.Context) (*session, error) {
	s := &session{configPath: g.config}
	if g.config != "" {
		data, err := os.ReadFile(g.config)
		if err != nil {
			return nil, fmt.Errorf("--config: %w", err)
		}
		if s.cfg, err = config.Parse(data); err != nil {
			return nil, fmt.Errorf("--config %s: %w", g.config, err)
		}
		s.prefix = s.cfg.Redis.Prefix
	}
	off := &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	if g.cluster {
		s.cluster = redis.NewClusterClient(&redis.ClusterOptions{Addrs: g.redis, Username: g.username,
			Password: g.password, MaintNotificationsConfig: off})
		s.rdb = s.cluster
	} else {
		s.single = redis.NewClient(&redis.Options{Addr: g.redis[0], Username: g.username,
			Password: g.password, DB: g.db, MaintNotificationsConfig: off})
		s.rdb = s.single
	}
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		s.close()
		return nil, fmt.Errorf("%s %s: %w", g.redisArg, strings.Join(g.redis, ","), err)
	}
	return s, nil
}

func (s *session) close() { s.rdb.Close() }

// target resolves --rule and the PART arguments to the rule and its key.
func (s *session) target(ruleName string, parts []string) (*config.Rule, string, error) {
	rule, ok := s.cfg.Rule(ruleName)
	if !ok {
		return nil, "", fmt.Errorf("--rule: no rule %q in %s (its rules: %s)", ruleName, s.configPath, strings.Join(ruleNames(s.cfg), ", "))
	}
	if len(parts) != len(rule.Key) {
		return nil, "", fmt.Errorf("rule %s: its key has %d part(s) (%s): give as many PART arguments, not %d",
			rule.Name, len(rule.Key), describeKey(rule.Key), len(parts))
	}
	base, err := keyspace.RuleKey(s.cfg, rule, parts)
	if err != nil {
		return nil, "", err
	}
	return rule, base, nil
}

// ruleNames lists the configuration's rules, those of _rules_ entries
// included, once each.
func ruleNames(cfg *config.Config) []string {
	var names []string
	add := func(rules []config.Rule) {
		for _, r := range rules {
			if !slices.Contains(names, r.Name) {
				names = append(names, r.Name)
			}
		}
	}
	add(cfg.Rules)
	for _, mr := range cfg.MatchRules {
		add(mr.Config.Rules)
	}
	return names
}

func describeKey(key []config.KeyPart) string {
	d := make([]string, len(key))
	for i, p := range key {
		switch p.Source {
		case config.SourceHeader:
			d[i] = "header " + p.Name
		case config.SourceQuery:
			d[i] = "query " + p.Name
		case config.SourceCookie:
			d[i] = "cookie " + p.Name
		case config.SourceClientIP:
			d[i] = "client_ip"
		case config.SourcePath:
			d[i] = "path"
		case config.SourceMethod:
			d[i] = "method"
		case config.SourceHost:
			d[i] = "host"
		case config.SourceConstant:
			d[i] = fmt.Sprintf("constant %q", p.Value)
		case config.SourceJWTClaim:
			d[i] = "jwt_claim " + p.Name
		case config.SourceProperty:
			d[i] = "property " + strings.Join(p.Path, ".")
		case config.SourceBody:
			d[i] = "body " + p.BodyPath
		default:
			d[i] = "?"
		}
	}
	return strings.Join(d, ", ")
}

// bumpEpoch increments the epoch key after a change, so that every VM
// drops its deny cache, and returns the new epoch. A Redis full under
// maxmemory refuses INCR; the library's bump function, flagged
// allow-oom, does it then (an INCR of an integer allocates nothing).
func (s *session) bumpEpoch(ctx context.Context) (int64, error) {
	key := keyspace.EpochKey(s.prefix)
	n, err := s.rdb.Incr(ctx, key).Result()
	if err == nil {
		return n, nil
	}
	if !redis.HasErrorPrefix(err, "OOM") {
		return 0, fmt.Errorf("INCR %s: %w", key, err)
	}
	n, ferr := s.rdb.FCall(ctx, lua.Library.Bump, []string{key}).Int64()
	if ferr != nil {
		hint := ""
		if strings.HasPrefix(ferr.Error(), "ERR Function not found") {
			hint = " (the library is not loaded: run `ratelimitctl install`)"
		}
		return 0, fmt.Errorf("INCR %s: %w; FCALL %s: %w%s", key, err, lua.Library.Bump, ferr, hint)
	}
	return n, nil
}

// node is one server to SCAN: the single server, or a cluster master.
type node struct {
	addr   string
	client *redis.Client
}

// nodes returns the servers that hold keys: the single server, or every
// master of the cluster, sorted by address so that a cursor's master index
// means the same master from one run to the next.
func (s *session) nodes(ctx context.Context) ([]node, error) {
	if s.cluster == nil {
		return []node{{s.single.Options().Addr, s.single}}, nil
	}
	var mu sync.Mutex
	var ns []node
	err := s.cluster.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		ns = append(ns, node{c.Options().Addr, c})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cluster masters: %w", err)
	}
	slices.SortFunc(ns, func(a, b node) int { return strings.Compare(a.addr, b.addr) })
	return ns, nil
}
