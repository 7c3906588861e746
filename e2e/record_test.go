package e2e

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// scriptRecord keeps every script call a redistest.Proxy forwards to
// Redis, with Redis's decision: what Redis decided, when by its own clock
// (the script reads TIME), whatever the speed of the machine. Redis runs
// scripts one at a time, so the decisions' times order the calls as Redis
// ran them.
type scriptRecord struct {
	mu    sync.Mutex
	calls []scriptCall
	bad   []string // replies that are neither a decision nor -NOSCRIPT

	admitted, denied atomic.Int64 // decisions so far
}

// scriptCall is one FCALL (or EVALSHA or EVAL) as forwarded, and its
// decision.
type scriptCall struct {
	args     []string
	blocks   []string // block keys
	keys     []string // one key per check
	costs    []int64  // one cost per check
	decided  bool     // false: the reply was -NOSCRIPT
	decision algorithms.Decision
}

// recordScripts makes p record every script call it forwards.
func recordScripts(p *redistest.Proxy) *scriptRecord {
	r := &scriptRecord{}
	p.SetObserve(func(args []string, reply []byte) {
		if !isScriptCall(args) {
			return
		}
		c, err := parseScriptCall(args, reply)
		r.mu.Lock()
		defer r.mu.Unlock()
		if err != nil {
			r.bad = append(r.bad, fmt.Sprintf("%.200q: %v", reply, err))
		}
		r.calls = append(r.calls, c)
		switch {
		case !c.decided:
		case c.decision.Allowed():
			r.admitted.Add(1)
		default:
			r.denied.Add(1)
		}
	})
	return r
}

// isScriptCall reports whether args call the library (FCALL) or the
// script (EVALSHA, EVAL).
func isScriptCall(args []string) bool {
	if len(args) < 3 {
		return false
	}
	switch strings.ToUpper(args[0]) {
	case "FCALL", "EVALSHA", "EVAL":
		return true
	}
	return false
}

// parseScriptCall reads a call's keys and costs from its arguments,
//
//	FCALL <decide> <numkeys> <blocks...> <keys...> <len(blocks)> <4 args per check>
//
// and its decision from the reply.
func parseScriptCall(args []string, reply []byte) (scriptCall, error) {
	c := scriptCall{args: args}
	if len(args) == 5 && args[2] == "1" && args[4] == "e" {
		return c, nil // a VM reading the epoch (see filter/epoch.go): no decision
	}
	numkeys, err := strconv.Atoi(args[2])
	if err != nil || 4+numkeys > len(args) {
		return c, errors.New("malformed call")
	}
	nb, err := strconv.Atoi(args[3+numkeys])
	n := numkeys - nb
	if err != nil || nb < 0 || n < 0 || len(args) != 4+numkeys+4*n {
		return c, errors.New("malformed call")
	}
	c.blocks, c.keys = args[3:3+nb], args[3+nb:3+numkeys]
	for i := range n {
		cost, err := strconv.ParseInt(args[4+numkeys+4*i+3], 10, 64)
		if err != nil {
			return c, errors.New("malformed cost")
		}
		c.costs = append(c.costs, cost)
	}
	v, _, err := redisproto.Decode(reply)
	if err != nil {
		return c, err
	}
	var rerr *redisproto.Error
	if err := c.decision.Parse(v, nb, n); errors.As(err, &rerr) && rerr.Prefix() == "NOSCRIPT" {
		return c, nil
	} else if err != nil {
		return c, err
	}
	c.decided = true
	return c, nil
}

// args returns the arguments of every script call recorded.
func (r *scriptRecord) args() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([][]string, len(r.calls))
	for i, c := range r.calls {
		out[i] = c.args
	}
	return out
}

// decisions returns the calls Redis decided, in the order it ran them,
// and fails the test if any reply was not a decision or two share a time
// (a script takes well over a microsecond, so none should).
func (r *scriptRecord) decisions(t *testing.T) []scriptCall {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bad) > 0 {
		t.Fatalf("%d script replies were not decisions; first: %s", len(r.bad), r.bad[0])
	}
	var out []scriptCall
	for _, c := range r.calls {
		if c.decided {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].decision.Now < out[j].decision.Now })
	for i := 1; i < len(out); i++ {
		if out[i].decision.Now == out[i-1].decision.Now {
			t.Fatalf("two calls share Redis time %d: their order is unknown", out[i].decision.Now)
		}
	}
	return out
}

// replay runs calls through algorithms.Model at the times Redis reported,
// in that order, with no block key present, and fails the test at the
// first decision that differs. limits maps each check key to its limit.
// It returns the admission times.
func replay(t *testing.T, calls []scriptCall, limits map[string]algorithms.Limit) []int64 {
	t.Helper()
	m := algorithms.NewModel()
	var admitted []int64
	for i, c := range calls {
		checks := make([]algorithms.Check, len(c.keys))
		for j, k := range c.keys {
			l, ok := limits[k]
			if !ok {
				t.Fatalf("call %d: key %q is not under test", i, k)
			}
			checks[j] = algorithms.Check{Key: k, Limit: l, Cost: c.costs[j]}
		}
		blocks := make([]int64, len(c.blocks))
		for j := range blocks {
			blocks[j] = -2
		}
		want := m.Decide(c.decision.Now, blocks, checks)
		if !equalDecisions(c.decision, want) {
			t.Fatalf("call %d of %d at %d: Redis decided\n%+v\nthe model\n%+v", i, len(calls), c.decision.Now, c.decision, want)
		}
		if want.Allowed() {
			admitted = append(admitted, c.decision.Now)
		}
	}
	return admitted
}

func equalDecisions(a, b algorithms.Decision) bool {
	if a.Now != b.Now || a.Blocked != b.Blocked || a.BlockedBy != b.BlockedBy || a.BlockedFor != b.BlockedFor || len(a.Results) != len(b.Results) {
		return false
	}
	for i := range a.Results {
		if a.Results[i] != b.Results[i] {
			return false
		}
	}
	return true
}

// startRecorded starts the Higress module on 4 workers with rules, its
// Redis calls passing a proxy that records every script call and reply.
func startRecorded(t *testing.T, prefix, upstreamURL, rules string) (*wasmhost.Host, *scriptRecord) {
	t.Helper()
	p := redistest.StartProxy(t, server.Addr)
	calls := recordScripts(p)
	tg := startBuild(t, "higress", wasmhost.Config{Workers: 4, Upstream: upstreamURL, PauseTimeout: exactPauseGuard},
		exactConfig(prefix, rules), p.Addr)
	return tg.h, calls
}
