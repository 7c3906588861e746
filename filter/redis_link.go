package filter

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/redisfail"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// RedisInitializer is a PluginHost whose Redis client must be configured
// before use: Higress's Redis callout (proxy_redis_init). InitRedis fails
// while the proxy does not know the cluster (yet) on this worker.
type RedisInitializer interface {
	InitRedis() error
}

// relinkEvery bounds proxy_redis_init retries and re-inits: at most one
// per this period per VM.
const relinkEvery = time.Second

// redisLink is the state of the proxy's Redis client as the filter sees
// it: one per VM, used by every policy (they have one client).
//
// Higress's client needs proxy_redis_init, which fails until the cluster
// exists on the worker; until it succeeds no call is sent, requests get
// the failure mode, and the init is retried on requests and ticks.
// Higress throws away the replies to the AUTH and SELECT it sends on each
// new connection, so a refused password, or a cluster entry rebuilt
// without its init, shows as -NOAUTH replies to our calls: then the filter
// redoes the init and sends AUTH itself on the connection, since an
// init with an unchanged configuration keeps the connection (higress-group
// envoy, AsyncClientImpl::initialize). Higress's client neither routes by
// slot nor follows -MOVED or -ASK: those are counted and explained.
type redisLink struct {
	host     RedisInitializer // nil: nothing to initialise (Webdis)
	cfg      *config.RedisConfig
	ready    bool
	failed   int       // init failures since the last success
	lastInit time.Time // the last proxy_redis_init, tried or redone
	auth     struct {
		id      uint32
		pending bool
	}
	identity redisIdentity // redis_identity.go
	// initErr is why the last proxy_redis_init failed; nil once one
	// succeeded.
	initErr error
	// health hears of failed inits and calls not sent; mode is the top
	// level's failure mode, as its lines say it.
	health *redisHealth
	mode   string
	// routed: the filter routes by slot itself (redis.nodes), so -MOVED
	// and -ASK are followed, not explained.
	routed bool
	log    PluginHost
	// Each kind of news has its own throttled log, so that one cannot
	// hide another.
	authLog, refusedLog, clusterLog quietLog

	initFailures  Counter // ratelimit.redis.init_failures
	uninitialized Counter // ratelimit.redis.uninitialized: calls not sent, no init yet
	reinits       Counter // ratelimit.redis.reinits: inits redone after -NOAUTH
	redirected    Counter // ratelimit.redis.redirected: -MOVED or -ASK replies
	send          func([]byte) (uint32, error)
	callouts      *callouts
}

func newRedisLink(cfg *config.Config, host PluginHost, send func([]byte) (uint32, error), t *callouts) *redisLink {
	every := 10 * time.Second
	l := &redisLink{cfg: &cfg.Redis, ready: true, send: send, callouts: t, log: host,
		authLog:       quietLog{host: host, every: every},
		refusedLog:    quietLog{host: host, every: every},
		clusterLog:    quietLog{host: host, every: every},
		initFailures:  host.Counter("ratelimit.redis.init_failures"),
		uninitialized: host.Counter("ratelimit.redis.uninitialized"),
		reinits:       host.Counter("ratelimit.redis.reinits"),
		redirected:    host.Counter("ratelimit.redis.redirected"),
	}
	l.identity = redisIdentity{log: quietLog{host: host, every: every},
		wrongUser: host.Counter("ratelimit.redis.wrong_user"),
		missing:   host.Counter("ratelimit.redis.library_missing")}
	if ri, ok := host.(RedisInitializer); ok && cfg.Redis.Transport == config.TransportRedisABI {
		l.host, l.ready = ri, false
	}
	return l
}

// Start makes the first proxy_redis_init. Its failure does not fail the
// plugin start: a rejected configuration would leave traffic unlimited,
// while retrying lets the plugin limit once the cluster exists.
func (p *Plugin) Start() {
	p.link.init(p.host.Now())
}

// RedisReady reports whether the proxy's Redis client is initialised.
func (p *Plugin) RedisReady() bool { return p.link.ready }

// usable reports whether calls may be sent, first retrying a failed init
// when the last try is old enough. A connection that runs as the wrong
// user is not (redis_identity.go).
func (l *redisLink) usable(now time.Time) bool {
	if !l.ready && now.Sub(l.lastInit) >= relinkEvery {
		l.init(now)
	}
	if l.identity.wrong && now.Sub(l.identity.sentAt) >= relinkEvery {
		l.relink(now)
	}
	if l.identity.due && l.ready && (l.identity.sentAt.IsZero() || now.Sub(l.identity.sentAt) >= relinkEvery) {
		l.checkIdentity(now)
	}
	return l.ready && !l.identity.wrong
}

func (l *redisLink) tryInit(now time.Time) {
	if l.host == nil {
		return
	}
	l.lastInit = now
	err := l.host.InitRedis()
	l.ready = err == nil
	if err != nil {
		l.failed++
		l.initFailures.Increment(1)
		l.initErr = &redisfail.InitError{Err: err}
		l.health.fail(now, l.initErr, l.mode)
		return
	}
	l.initErr = nil
	if l.failed > 0 {
		l.log.Log(LogInfo, "ratelimit: redis: proxy_redis_init for cluster "+l.cfg.Cluster+" succeeded after "+strconv.Itoa(l.failed)+" failures")
		l.failed = 0
	}
}

// why says why the link is not usable: the init failed, or the
// connection runs as the wrong user.
func (l *redisLink) why() error {
	switch {
	case l.identity.wrong && l.identity.err != nil:
		return l.identity.err
	case l.initErr != nil:
		return l.initErr
	}
	return redisfail.ErrUninitialized
}

// init is tryInit; once it succeeds, the identity is checked at the next
// use of the link.
func (l *redisLink) init(now time.Time) {
	l.tryInit(now)
	l.identity.due = l.ready
}

// onTick retries a failed init.
func (l *redisLink) onTick(now time.Time) { l.usable(now) }

// onErrorReply reacts to the error replies that say something about the
// proxy's client rather than about the call.
func (l *redisLink) onErrorReply(err error, now time.Time) {
	var rerr *redisproto.Error
	if !errors.As(err, &rerr) {
		return
	}
	switch rerr.Prefix() {
	case "ERR":
		l.onMissingFunction(rerr.Msg)
	case "NOAUTH":
		l.relink(now)
	case "MOVED", "ASK":
		l.redirected.Increment(1)
		if l.routed {
			return
		}
		l.clusterLog.log(LogWarn, "ratelimit: redis: "+rerr.Msg+": the cluster is a raw Redis Cluster, and the proxy's Redis client neither routes by slot nor follows MOVED or ASK; "+
			"put a cluster-aware proxy between them (Envoy's redis_proxy on loopback: see the README, Redis Cluster)")
	}
}

// relink redoes the init, at most once per relinkEvery, and sends AUTH on
// the connection: -NOAUTH means the connection is not authenticated (a
// refused password, or a rebuilt cluster entry that lost its init).
func (l *redisLink) relink(now time.Time) {
	if l.host == nil || now.Sub(l.lastInit) < relinkEvery {
		return
	}
	l.reinits.Increment(1)
	if l.cfg.Password == "" {
		l.authLog.log(LogWarn, "ratelimit: redis: NOAUTH: Redis requires a password and redis.password is not set; redoing proxy_redis_init")
	} else {
		l.authLog.log(LogWarn, "ratelimit: redis: NOAUTH: the proxy's connection to Redis is not authenticated (a wrong password, or the cluster was rebuilt without its init); redoing proxy_redis_init and sending AUTH")
	}
	l.tryInit(now)
	if !l.ready || l.cfg.Password == "" {
		return
	}
	args := []string{"AUTH", l.cfg.Password}
	if l.cfg.Username != "" {
		args = []string{"AUTH", l.cfg.Username, l.cfg.Password}
	}
	if id, err := l.send(redisproto.AppendCommand(nil, args...)); err == nil {
		if l.auth.pending { // the earlier AUTH's reply is no longer awaited
			l.callouts.remove(l.auth.id)
		}
		l.auth.id, l.auth.pending = id, true
		l.callouts.add(id, (*authCallout)(l))
	}
	l.checkIdentity(now)
}

// authCallout is the link awaiting its AUTH's reply: a second view of
// redisLink, so that it needs no allocation. It is never overdue.
type authCallout redisLink

func (a *authCallout) onReply(_ *Plugin, r scriptReply) {
	l := (*redisLink)(a)
	l.callouts.remove(l.auth.id)
	l.onAuthReply(r.ok, r.resp)
}
func (*authCallout) overdue(*Plugin, time.Time) {}

// onAuthReply logs what Redis said to the filter's own AUTH. A refusal
// is a warning: the calls it fails make the health's error line.
func (l *redisLink) onAuthReply(ok bool, reply []byte) {
	l.auth.pending = false
	log := l.log.Log // at most once per relinkEvery: not throttled
	switch {
	case !ok:
		log(LogWarn, "ratelimit: redis: AUTH failed or timed out")
	case len(reply) > 0 && reply[0] == '-':
		l.refusedLog.log(LogWarn, "ratelimit: redis: Redis refused redis.username/redis.password: "+strings.TrimSpace(string(reply[1:])))
	default:
		log(LogInfo, "ratelimit: redis: AUTH accepted")
	}
}
