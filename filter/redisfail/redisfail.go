// Package redisfail names why a call to Redis failed, beyond Redis's own
// error replies and the transports' failures, and says what each failure
// means for an operator, as the filter's health lines print it.
package redisfail

import (
	"bytes"
	"errors"
	"strconv"
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// ErrUninitialized: proxy_redis_init has not succeeded yet, so no call is
// sent.
var ErrUninitialized = errors.New("redis: proxy_redis_init has not succeeded yet")

// QuoteUser quotes a Redis user name for a log line.
func QuoteUser(u string) string { return `"` + u + `"` }

// Why a call failed, beyond Redis's own error replies and the transports'
// failures.
type (
	// DispatchError: the proxy refused the callout itself, as Envoy does
	// an HTTP callout to a cluster it does not know.
	DispatchError struct{ Err error }
	// InitError: proxy_redis_init failed.
	InitError struct{ Err error }
	// WrongUserError: ACL WHOAMI named another user.
	WrongUserError struct{ Got, Want string }
	// WebdisStatus: Webdis, or the proxy on its way, answered this HTTP
	// status.
	WebdisStatus int
	// WebdisUnavailable: a 5xx answer, and the start of its body, which
	// says whose it is: Webdis's own 503 has no body and means that
	// Webdis cannot reach Redis behind it, or lost it with the command
	// sent; the proxy's has one (Envoy:
	// "no healthy upstream", "upstream connect error ..."). Another 5xx
	// with no body is its status alone.
	WebdisUnavailable struct {
		Status WebdisStatus
		Body   string // at most maxBody printable ASCII bytes
	}
)

// maxBody bounds the body a WebdisUnavailable quotes.
const maxBody = 80

// NoRedisBehindWebdis is how a WebdisUnavailable with no body reads.
const NoRedisBehindWebdis = "webdis cannot reach Redis behind it"

// WebdisFailure is the error for Webdis's answer of status (not 200):
// a WebdisUnavailable for 5xx, whose body is read up to maxBody bytes,
// else a WebdisStatus.
// Printable is s, Redis's or Webdis's text, fit for a log line: clipped
// to maxBody bytes, each byte not printable ASCII replaced by '?'.
func Printable(s string) string {
	s = s[:min(len(s), maxBody)]
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] < ' ' || b[j] > '~' {
					b[j] = '?'
				}
			}
			return string(b)
		}
	}
	return s
}

func WebdisFailure(status int, body []byte) error {
	if status < 500 || status > 599 {
		return WebdisStatus(status)
	}
	body = bytes.TrimSpace(body)
	if len(body) > maxBody {
		body = body[:maxBody]
	}
	b := make([]byte, len(body))
	for i, c := range body {
		if c < ' ' || c > '~' {
			c = '?'
		}
		b[i] = c
	}
	return &WebdisUnavailable{Status: WebdisStatus(status), Body: string(b)}
}

func (e *DispatchError) Error() string { return "dispatch: " + e.Err.Error() }
func (e *DispatchError) Unwrap() error { return e.Err }
func (e *InitError) Error() string     { return "proxy_redis_init failed: " + e.Err.Error() }
func (e *InitError) Unwrap() error     { return e.Err }
func (e *WrongUserError) Error() string {
	return "the connection runs as user " + QuoteUser(e.Got) + ", not " + QuoteUser(e.Want)
}
func (s WebdisStatus) Error() string { return "webdis answered HTTP " + strconv.Itoa(int(s)) }
func (e *WebdisUnavailable) Error() string {
	switch {
	case e.noRedis():
		return e.Status.Error() + ": " + NoRedisBehindWebdis
	case e.Body == "":
		return e.Status.Error()
	}
	return e.Status.Error() + ": " + strconv.Quote(e.Body)
}

// noRedis reports whether e is Webdis's own 503, with no body: Webdis
// cannot reach Redis. Another 5xx with no body says nothing more.
func (e *WebdisUnavailable) noRedis() bool { return e.Status == 503 && e.Body == "" }

func (e *WebdisUnavailable) Unwrap() error { return e.Status }

// Describe says what failed, for a health line: the cluster is
// unknown, unreachable, refuses the credentials or a command, lacks the
// library, is full (-OOM) or a replica (-READONLY), or answered something
// else. err's text is kept whole.
func Describe(err error) string {
	var (
		de    *DispatchError
		ie    *InitError
		wu    *WrongUserError
		se    *SlotError
		ws    WebdisStatus
		unav  *WebdisUnavailable
		rerr  *redisproto.Error
		cause = " (" + err.Error() + ")"
	)
	switch {
	case errors.As(err, &de):
		return "refused by the proxy" + cause + ": the proxy does not know the cluster, or cannot call it"
	case errors.As(err, &ie):
		return "unknown to the proxy" + cause + ": the proxy does not know the cluster on this worker (yet); retrying at most once per second"
	case errors.As(err, &wu):
		return "refused redis.username/redis.password" + cause + ": Higress kept the connection as the default user, so no call is sent"
	case errors.As(err, &ws) && (ws == 401 || ws == 403):
		return "refused the filter's credentials or command at Webdis" + cause + ": check redis.username/redis.password and Webdis's ACL"
	case errors.As(err, &ws) && ws >= 400 && ws < 500:
		return "refused the call at Webdis" + cause + ": check redis.path and redis.authority"
	case errors.As(err, &unav) && unav.noRedis():
		return "unreachable" + cause + ": check that Redis runs where Webdis's redis_host and redis_port say, and redis_auth"
	case errors.As(err, &se):
		return describeSlot(se, cause)
	case errors.As(err, &rerr):
		return describeRedisError(rerr, cause)
	case errors.Is(err, ErrUninitialized):
		return "not initialised" + cause
	case errors.Is(err, algorithms.ErrUnexpectedReply):
		return "answered unexpectedly" + cause
	}
	return "unreachable" + cause
}

// WritesRefused reports whether err is Redis refusing writes while it
// still serves reads: full (-OOM), a replica (-READONLY), or a failed
// snapshot (-MISCONF). A read that succeeds says nothing of its end.
func WritesRefused(err error) bool {
	var rerr *redisproto.Error
	if !errors.As(err, &rerr) {
		return false
	}
	switch rerr.Prefix() {
	case "OOM", "READONLY", "MISCONF":
		return true
	}
	return false
}

// describeRedisError says what an error reply of Redis means for the
// filter.
func describeRedisError(e *redisproto.Error, cause string) string {
	switch e.Prefix() {
	case "NOPERM":
		return "refused a command of the filter's user" + cause + ": grant it what deploy/redis/users.acl grants"
	case "NOAUTH", "WRONGPASS":
		return "refused AUTH" + cause + ": check redis.username/redis.password"
	case "MOVED", "ASK":
		return "redirected the call" + cause + ": it is a raw Redis Cluster"
	case "TRYAGAIN":
		return "is migrating the call's slot" + cause + ": the call was retried until redis.timeout"
	case "CLUSTERDOWN":
		return "is down" + cause + ": the cluster lost a master with no replica promoted yet; ship cluster-require-full-coverage no"
	case "READONLY":
		return "is a replica" + cause + ": point redis.cluster at the primary (docs/redis.md, Replicas and failover)"
	case "OOM":
		return "is full" + cause + ": used memory is above maxmemory, and Redis refuses the filter's writes; " +
			"raise maxmemory or free memory, and keep maxmemory-policy noeviction (docs/redis.md)"
	}
	if strings.HasPrefix(e.Msg, "ERR Function not found") {
		return "lacks the library " + algorithms.Library.Name + cause + ": load it with ratelimitctl install"
	}
	return "answered an error" + cause
}
