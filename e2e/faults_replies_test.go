package e2e

import (
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
	canned, errs := p.Canned.Load(), l.metric("ratelimit.redis.errors")
	if errs < canned || l.failures.Load() != errs {
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

// faultForeignScript makes a different script answer under our script's
// SHA. SHA1 cannot be forged, so the proxy between host and Redis rewrites
// the SHA argument of each EVALSHA to the SHA of another script, loaded
// with SCRIPT LOAD (and the body of an EVAL to that script's body): to the
// filter, Redis seems to hold another script under our SHA.
func faultForeignScript(t *testing.T, mode string) int64 {
	p := redistest.StartProxy(t, server.Addr)
	l := newFaultLoad(t, mode, "", p.Addr, faultTimeout)
	l.run(func() {
		l.waitMore("decisions before the fault", &l.decisions)
		for _, src := range foreignScripts {
			sha, err := server.Client.Text("SCRIPT", "LOAD", src)
			if err != nil {
				t.Fatal(err)
			}
			before := p.Rewritten.Load()
			p.SetRewrite(runInstead(sha, src))
			waitFor(t, "a call answered by "+src, func() bool { return p.Rewritten.Load() > before })
		}
		p.SetRewrite(nil)
		l.waitMore("decisions by our script again", &l.decisions)
	})
	rewritten, errs := p.Rewritten.Load(), l.metric("ratelimit.redis.errors")
	if errs < rewritten || l.failures.Load() != errs {
		t.Fatalf("%d calls answered by another script, %d Redis errors, %d failure-mode answers", rewritten, errs, l.failures.Load())
	}
	return l.finish()
}

// runInstead rewrites an EVALSHA of our script to run the script loaded
// under sha, and an EVAL of ours to run source.
func runInstead(sha, source string) func(args []string) bool {
	return func(args []string) bool {
		switch {
		case len(args) < 2:
		case strings.EqualFold(args[0], "EVALSHA") && args[1] == algorithms.Script.SHA:
			args[1] = sha
			return true
		case strings.EqualFold(args[0], "EVAL") && args[1] == algorithms.Script.Source:
			args[1] = source
			return true
		}
		return false
	}
}
