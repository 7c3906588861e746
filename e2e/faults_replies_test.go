package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// wrongShapes are valid RESP replies (and one invalid one) that the script
// never returns.
var wrongShapes = []struct{ name, reply string }{
	{"integer", ":1\r\n"},
	{"two strings", "*2\r\n$3\r\nfoo\r\n$3\r\nbar\r\n"},
	{"error", "-ERR not the rate-limit script\r\n"},
	{"status", "+OK\r\n"},
	{"null bulk", "$-1\r\n"},
	{"null array", "*-1\r\n"},
	{"empty array", "*0\r\n"},
	{"header without results", "*2\r\n:1700000000000000\r\n:-2\r\n"},
	{"nested array", "*7\r\n*1\r\n:1\r\n:-2\r\n:1\r\n:3\r\n:2\r\n:-1\r\n:0\r\n"},
	{"RESP3 map", "%1\r\n+now\r\n:1\r\n"},
	{"70 KiB bulk string", "$71680\r\n" + strings.Repeat("x", 71680) + "\r\n"},
	{"not RESP", "hello\r\n"},
}

// faultWrongShape puts a fake Redis between host and Redis that answers
// every command with a reply of the wrong shape, one shape after another,
// then lets commands through to the real Redis again.
func faultWrongShape(t *testing.T, mode string) int64 {
	p := redistest.StartProxy(t, server.Addr)
	l := newFaultLoad(t, mode, "", p.Addr, faultTimeout)
	l.run(func() {
		l.waitMore("decisions before the fault", &l.decisions)
		for _, w := range wrongShapes {
			before := p.Canned.Load()
			p.SetCanned([]byte(w.reply))
			waitFor(t, "a "+w.name+" reply served", func() bool { return p.Canned.Load() > before })
		}
		p.SetCanned(nil)
		l.waitMore("decisions through to Redis again", &l.decisions)
	})
	// Epoch reads may get a canned reply too: an error, and no answer. An
	// ACL WHOAMI's canned reply is asked again (not a Redis error).
	canned, errs := p.Canned.Load()-p.CannedACL.Load(), l.metric("ratelimit.redis.errors")
	if errs < canned || l.failures.Load() != decisionErrors(l.tg) {
		t.Fatalf("%d wrong replies served, %d Redis errors, %d failure-mode answers: every wrong reply must be an error answered by the failure mode",
			canned, errs, l.failures.Load())
	}
	return l.finish()
}

// foreignScripts return what our script never does; none of them is a
// well-formed decision.
var foreignScripts = []string{
	"return 1",
	"return redis.call('TIME')",
	"return {tonumber(redis.call('TIME')[1]), -2}",
	"return redis.error_reply('ERR not the rate-limit script')",
	"return {1, -2, 7, 5, 4, -1, 0}",
	"return {1, -2, 1, 5, 9, -1, 0}",
	"return {1, -2, 0, 5, 0, -1, 0}",
	"return 'a string'",
}

// faultForeignScript makes other functions answer under our library's
// names: the proxy between host and Redis rewrites each FCALL of ours to
// call a function of another library, which runs one of foreignScripts.
// To the filter, Redis seems to hold other code under our names.
func faultForeignScript(t *testing.T, mode string) int64 {
	p := redistest.StartProxy(t, server.Addr)
	l := newFaultLoad(t, mode, "", p.Addr, faultTimeout)
	lib := "#!lua name=impostor_" + mode + "\n"
	var names []string
	for i, src := range foreignScripts {
		names = append(names, fmt.Sprintf("impostor_%s_%d", mode, i))
		lib += "redis.register_function('" + names[i] + "', function(KEYS, ARGV) " + src + " end)\n"
	}
	if _, err := server.Client.Do("FUNCTION", "LOAD", "REPLACE", lib); err != nil {
		t.Fatal(err)
	}
	l.run(func() {
		l.waitMore("decisions before the fault", &l.decisions)
		for i, name := range names {
			before := p.Rewritten.Load()
			p.SetRewrite(runInstead(name))
			waitFor(t, "a call answered by "+foreignScripts[i], func() bool { return p.Rewritten.Load() > before })
		}
		p.SetRewrite(nil)
		l.waitMore("decisions by our library again", &l.decisions)
	})
	rewritten, errs := p.Rewritten.Load(), l.metric("ratelimit.redis.errors")
	if errs < rewritten || l.failures.Load() != decisionErrors(l.tg) {
		t.Fatalf("%d calls answered by other functions, %d Redis errors, %d failure-mode answers", rewritten, errs, l.failures.Load())
	}
	return l.finish()
}

// runInstead rewrites an FCALL of our decide to call fn.
func runInstead(fn string) func(args []string) bool {
	return func(args []string) bool {
		if len(args) >= 2 && strings.EqualFold(args[0], "FCALL") && args[1] == algorithms.Library.Decide {
			args[1] = fn
			return true
		}
		return false
	}
}
