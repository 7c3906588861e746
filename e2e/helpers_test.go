package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitGuard bounds every wait for an event. It guards against a hang, and
// is no statement about speed.
const waitGuard = 30 * time.Second

// waitFor polls cond until it holds, failing the test after waitGuard.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(waitGuard); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting after %v: %s", waitGuard, what)
		}
	}
}

// problems collects what went wrong in client goroutines; the first few
// are reported.
type problems struct {
	mu    sync.Mutex
	n     int
	first []string
}

func (p *problems) add(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if len(p.first) < 5 {
		p.first = append(p.first, fmt.Sprintf(format, args...))
	}
}

// report marks the test failed if anything went wrong. It does not stop
// the test (Errorf), so it is safe in a deferred call.
func (p *problems) report(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n > 0 {
		t.Errorf("%d bad answers; first ones:\n%s", p.n, strings.Join(p.first, "\n"))
	}
}

// check reports, and stops the test if anything went wrong.
func (p *problems) check(t *testing.T) {
	t.Helper()
	p.report(t)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n > 0 {
		t.FailNow()
	}
}
