package filter

import (
	"strings"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/redisfail"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// Two things the proxy's Redis client cannot tell the filter, so the
// filter asks Redis.
//
// Who it runs as: Higress's client throws away the reply to the AUTH it
// sends on each new connection, so a refused username or password leaves
// the connection as Redis's default user, which may need no password and
// have every right. After each proxy_redis_init, with the first call, and
// again once a second while it is wrong or unanswered, the filter sends
// ACL WHOAMI: any user but the one configured (redis.username, else
// "default") is logged at critical level, counted in
// ratelimit.redis.wrong_user, and from then on no call is sent, so
// requests get failure_mode, and the VM counts as failing, until the
// connection runs as the right user. The calls sent before the first
// answer run as whatever user the connection is; they can only call the
// library's functions, and their replies make no VM healthy.
//
// Whether the library is loaded: an FCALL of a function Redis does not
// have is answered "ERR Function not found". That is logged at critical
// level, with the command that loads it, and counted in
// ratelimit.redis.library_missing; the call fails as any failed call does.
type redisIdentity struct {
	id        uint32
	due       bool // to ask at the next use: not at plugin start, where the VM may be a canary
	pending   bool
	wrong     bool      // the last WHOAMI named another user
	err       error     // which, when wrong: a *redisfail.WrongUserError
	sentAt    time.Time // the last WHOAMI
	wrongUser Counter   // ratelimit.redis.wrong_user
	missing   Counter   // ratelimit.redis.library_missing
	log       quietLog
}

// checkIdentity sends ACL WHOAMI on the proxy's Redis connection; one
// that cannot be sent is due again a second later.
func (l *redisLink) checkIdentity(now time.Time) {
	if l.host == nil || l.identity.pending {
		return
	}
	l.identity.due, l.identity.sentAt = false, now
	if id, err := l.send(redisproto.AppendCommand(nil, "ACL", "WHOAMI")); err == nil {
		l.identity.id, l.identity.pending = id, true
		l.callouts.add(id, (*whoamiCallout)(l))
	} else {
		l.identity.due = true
	}
}

// whoamiCallout is the link awaiting its ACL WHOAMI's reply, as
// authCallout is for AUTH. One a host never answers is dropped once late,
// and asked again.
type whoamiCallout redisLink

func (w *whoamiCallout) onReply(vm *Plugin, r scriptReply) {
	l := (*redisLink)(w)
	l.callouts.remove(l.identity.id)
	l.onIdentityReply(r.ok, r.resp, vm.host.Now())
}

func (w *whoamiCallout) overdue(vm *Plugin, now time.Time) {
	l := (*redisLink)(w)
	if vm.late(l.identity.sentAt, now) {
		l.callouts.remove(l.identity.id)
		l.identity.pending, l.identity.due = false, true
	}
}

// onIdentityReply compares the user Redis named with the configured one.
// A -NOAUTH says the connection is not authenticated, which is no missing
// right: the AUTH failed, which the health's error line says (refused
// AUTH: check redis.username/redis.password); the init is redone and
// AUTH sent, as for a call's -NOAUTH, and the user is asked again. A
// reply that is neither a user name nor an error (a proxy's garbled
// answer) names no user: it is asked again.
func (l *redisLink) onIdentityReply(ok bool, reply []byte, now time.Time) {
	l.identity.pending = false
	want := l.cfg.Username
	if want == "" {
		want = "default"
	}
	v, _, err := redisproto.Decode(reply)
	if !ok || err != nil {
		l.identity.due = true // lost or garbled: asked again a second later
		return
	}
	if rerr, _ := v.Err().(*redisproto.Error); rerr != nil && rerr.Prefix() == "NOAUTH" {
		l.identity.due = true
		l.health.fail(now, rerr, l.mode)
		l.relink(now)
		return
	}
	if v.Err() != nil {
		l.identity.wrong = false
		if rerr, _ := v.Err().(*redisproto.Error); rerr != nil && rerr.Prefix() != "NOPERM" {
			// Not Redis's refusal: a proxy in between (Envoy's redis_proxy
			// answers "unsupported command") does not pass ACL at all.
			l.identity.log.log(LogInfo, "ratelimit: redis: ACL WHOAMI not answered by Redis ("+v.Err().Error()+"): a proxy in between, such as Envoy's redis_proxy, does not pass it, so the filter cannot check which user reaches Redis; the proxy's own credentials decide that")
			return
		}
		l.identity.log.log(LogWarn, "ratelimit: redis: ACL WHOAMI refused ("+v.Err().Error()+"): the filter cannot check which user its connection runs as; grant the filter's user +acl|whoami (deploy/redis/users.acl)")
		return
	}
	got, terr := v.Text()
	if terr != nil {
		l.identity.due = true
		return
	}
	l.identity.wrong = got != want
	if l.identity.wrong {
		l.identity.err = &redisfail.WrongUserError{Got: got, Want: want}
		l.identity.wrongUser.Increment(1)
		l.health.fail(now, l.identity.err, l.mode)
		l.identity.log.log(LogCritical, "ratelimit: redis: the proxy's Redis connection runs as user "+redisfail.QuoteUser(got)+", not "+redisfail.QuoteUser(want)+
			": Redis refused redis.username/redis.password and Higress kept the connection as the default user; no call is sent and requests get failure_mode until it runs as "+redisfail.QuoteUser(want))
	}
}

// onMissingFunction reports a reply saying the library is not loaded.
func (l *redisLink) onMissingFunction(msg string) {
	if !strings.HasPrefix(msg, "ERR Function not found") {
		return
	}
	l.identity.missing.Increment(1)
	l.identity.log.log(LogCritical, "ratelimit: redis: the library "+algorithms.Library.Name+
		" is not loaded on Redis, so every call fails and requests get failure_mode: load it with `ratelimitctl install` (on every master of a cluster)")
}
