package filter

import (
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// loggedAt reports whether a line containing substr was logged at level.
func loggedAt(h *fakeHost, level LogLevel, substr string) bool {
	for i, l := range h.logs {
		if h.levels[i] == level && strings.Contains(l, substr) {
			return true
		}
	}
	return false
}

// A connection that Redis runs as another user than the configured one
// (Higress drops the reply to its AUTH, so a refused password leaves the
// default user) sends no call: requests get the failure mode, with a
// critical log line and a counter, until a later check finds the right
// user.
func TestWrongRedisUserAppliesFailureMode(t *testing.T) {
	h := newInitHost(t, strings.Replace(oneUser, `"password":"pw"`, `"username":"filter","password":"pw"`, 1))
	h.startLinked(t, "$7\r\ndefault\r\n")
	answer := func(r string) {
		t.Helper()
		if len(h.Queue) == 0 || string(h.Queue[0].Cmd) != whoami {
			t.Fatalf("queue %q; want ACL WHOAMI first", h.Queue)
		}
		q := h.Queue[0]
		h.Queue = h.Queue[1:]
		h.plugin.OnRedisReply(q.ID, true, []byte(r))
	}
	if !loggedAt(h.fakeHost, LogCritical, `runs as user "default", not "filter"`) || h.Counters["ratelimit.redis.wrong_user"] != 1 {
		t.Fatalf("counters %v, logs %q", h.Counters, h.logs)
	}
	if o := h.send("x-user=a"); o.status != 503 || h.Counters["ratelimit.redis.latency_ms.count"] != 0 {
		t.Fatalf("as the wrong user: %+v, counters %v", o, h.Counters)
	}
	// A second later the filter redoes the init, sends its AUTH and asks
	// again; the request meanwhile still gets the failure mode.
	h.Clock = h.Clock.Add(time.Second)
	fs, st := h.stream("x-user=a")
	st.OnDone()
	if fs.Status != 503 || len(h.Queue) != 2 || !strings.Contains(string(h.Queue[0].Cmd), "AUTH") {
		t.Fatalf("status %d, queue %q", fs.Status, h.Queue)
	}
	h.Queue = h.Queue[1:] // AUTH's reply is not awaited
	answer("+filter\r\n")
	if o := h.send("x-user=a"); o.status != 200 || o.headers["ratelimit"] == "" {
		t.Fatalf("as the right user: %+v", o)
	}
}

// A user without +acl|whoami cannot be checked: a warning says what to
// grant, and calls go on.
func TestWhoamiRefusedWarns(t *testing.T) {
	h := newInitHost(t, oneUser)
	h.startLinked(t, "-NOPERM this user has no permissions to run the 'acl|whoami' command\r\n")
	if !loggedAt(h.fakeHost, LogWarn, "grant the filter's user +acl|whoami") {
		t.Fatalf("logs %q", h.logs)
	}
	if o := h.send("x-user=a"); o.status != 200 {
		t.Fatalf("%+v", o)
	}
}

// Envoy's redis_proxy does not pass ACL at all: no grant helps, so no
// warning asks for one, and calls go on.
func TestWhoamiUnsupportedByProxy(t *testing.T) {
	h := newInitHost(t, oneUser)
	h.startLinked(t, "-unsupported command 'ACL'\r\n")
	if loggedAt(h.fakeHost, LogWarn, "+acl|whoami") || !loggedAt(h.fakeHost, LogInfo, "does not pass it") {
		t.Fatalf("logs %q", h.logs)
	}
	if o := h.send("x-user=a"); o.status != 200 {
		t.Fatalf("%+v", o)
	}
}

// Without the library on Redis every call fails: the failure mode
// applies, a critical line names the library and the command that loads
// it, and it is counted.
func TestLibraryMissingIsCritical(t *testing.T) {
	h := newFakeHost(t, perUser)
	if _, err := server.Do("FUNCTION", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // no filter test runs in parallel
		if err := redistest.LoadLibrary(server.Client); err != nil {
			t.Fatal(err)
		}
	})
	if o := h.send("x-user=a"); o.status != 200 || o.headers["ratelimit"] != "" {
		t.Fatalf("failure_mode allow: %+v", o)
	}
	if h.Counters["ratelimit.redis.library_missing"] != 1 || h.Counters["ratelimit.redis.errors"] != 1 ||
		!loggedAt(h, LogCritical, "is not loaded on Redis") || !loggedAt(h, LogCritical, "ratelimitctl install") {
		t.Fatalf("counters %v, logs %q", h.Counters, h.logs)
	}
}

// A WHOAMI whose reply is lost is asked again a second later, so one lost
// reply does not turn the check off.
func TestLostWhoamiIsAskedAgain(t *testing.T) {
	h := newInitHost(t, strings.Replace(oneUser, `"password":"pw"`, `"username":"filter","password":"pw"`, 1))
	h.plugin.Start()
	h.plugin.OnTick()
	if len(h.Queue) != 2 || string(h.Queue[0].Cmd) != whoami {
		t.Fatalf("queue %q; want ACL WHOAMI, then the epoch read", h.Queue)
	}
	q := h.Queue[0]
	h.Queue = h.Queue[1:]
	h.plugin.OnRedisReply(q.ID, false, nil) // timed out
	h.Pump()
	h.Clock = h.Clock.Add(500 * time.Millisecond)
	h.plugin.OnTick()
	if len(h.Queue) != 1 || !isEpochRead(h.Queue[0]) {
		t.Fatalf("asked again within a second: %q", h.Queue)
	}
	h.Pump()
	h.Clock = h.Clock.Add(600 * time.Millisecond)
	h.startLinkedAgain(t, "$7\r\ndefault\r\n") // the tick asks again
	if h.Counters["ratelimit.redis.wrong_user"] != 1 {
		t.Fatalf("counters %v", h.Counters)
	}
}

// startLinkedAgain ticks, answers with reply the ACL WHOAMI the tick
// sends, then sends the tick's epoch read to Redis.
func (h *initHost) startLinkedAgain(t *testing.T, reply string) {
	t.Helper()
	h.plugin.OnTick()
	if len(h.Queue) != 2 || string(h.Queue[0].Cmd) != whoami || !isEpochRead(h.Queue[1]) {
		t.Fatalf("queue %q; want ACL WHOAMI, then the epoch read", h.Queue)
	}
	q := h.Queue[0]
	h.Queue = h.Queue[1:]
	h.plugin.OnRedisReply(q.ID, true, []byte(reply))
	h.Pump()
}

// isEpochRead reports whether c is the epoch read each tick sends.
func isEpochRead(c filtertest.Call) bool { return strings.Contains(string(c.Cmd), "_epoch\r\n") }

// A WHOAMI the host never answers is dropped once late and asked again.
func TestUnansweredWhoamiIsAskedAgain(t *testing.T) {
	h := newInitHost(t, strings.Replace(oneUser, `"password":"pw"`, `"username":"filter","password":"pw"`, 1))
	h.plugin.Start()
	h.plugin.OnTick()
	if len(h.Queue) != 2 || string(h.Queue[0].Cmd) != whoami {
		t.Fatalf("queue %q; want ACL WHOAMI, then the epoch read", h.Queue)
	}
	h.Queue = h.Queue[:0] // never answered
	h.Clock = h.Clock.Add(h.plugin.Config().Redis.Timeout + 1100*time.Millisecond)
	h.plugin.OnTick() // drops it (and the epoch read), and reads the epoch again
	h.Pump()
	h.Clock = h.Clock.Add(time.Second)
	h.startLinkedAgain(t, "$7\r\ndefault\r\n")
	if h.Counters["ratelimit.redis.wrong_user"] != 1 {
		t.Fatalf("counters %v", h.Counters)
	}
}

// A call sent before the first ACL WHOAMI was answered, and answered
// after it named the wrong user, does not count the VM healthy: the gauge
// stays 0 and no line says Redis decides.
func TestWrongUserCallReplyIsNoHealth(t *testing.T) {
	h := newInitHost(t, strings.Replace(oneUser, `"password":"pw"`, `"username":"filter","password":"pw"`, 1))
	h.plugin.Start()
	fs, st := h.stream("x-user=a") // asks WHOAMI, then sends the call
	if len(h.Queue) != 2 || string(h.Queue[0].Cmd) != whoami {
		t.Fatalf("queue %q; want ACL WHOAMI, then the call", h.Queue)
	}
	q := h.Queue[0]
	h.Queue = h.Queue[1:]
	h.plugin.OnRedisReply(q.ID, true, []byte("$7\r\ndefault\r\n"))
	h.Pump() // the call, run as the default user
	st.OnDone()
	if fs.Status != 0 && fs.Status != 200 {
		t.Fatalf("the call sent before the answer: status %d", fs.Status)
	}
	if g := gauge(h.fakeHost, "ratelimit.redis.healthy"); g != 0 || loggedAt(h.fakeHost, LogInfo, "decides again") {
		t.Fatalf("as the wrong user: ratelimit.redis.healthy %d, logs %q; want 0 and no recovery line", g, h.logs)
	}
}

// A WHOAMI answered with no user name and no error (a proxy's garbled
// reply) names no user: no critical line, no wrong_user, calls go on,
// and the user is asked again a second later.
func TestGarbledWhoamiIsAskedAgain(t *testing.T) {
	for _, reply := range []string{":1\r\n", "$-1\r\n", "*0\r\n", "*2\r\n$3\r\nfoo\r\n$3\r\nbar\r\n"} {
		h := newInitHost(t, strings.Replace(oneUser, `"password":"pw"`, `"username":"filter","password":"pw"`, 1))
		h.startLinked(t, reply)
		if loggedAt(h.fakeHost, LogCritical, "runs as user") || h.Counters["ratelimit.redis.wrong_user"] != 0 {
			t.Fatalf("%q: counters %v, logs %q", reply, h.Counters, h.logs)
		}
		if o := h.send("x-user=a"); o.status != 200 {
			t.Fatalf("%q: %+v; want calls to go on", reply, o)
		}
		h.Clock = h.Clock.Add(1100 * time.Millisecond)
		h.plugin.OnTick()
		if len(h.Queue) == 0 || string(h.Queue[0].Cmd) != whoami {
			t.Fatalf("%q: queue %q; want ACL WHOAMI asked again", reply, h.Queue)
		}
	}
}
