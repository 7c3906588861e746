package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Process is a server a test started, waited on from the start: its
// output is kept, and its exit is an event (Exited), so a wait for it to
// become ready ends as soon as it is ready or gone, however busy the
// machine.
type Process struct {
	what   string
	cmd    *exec.Cmd
	out    *watchedOutput
	exited chan struct{} // closed once it has exited and been reaped
}

// readyGuard bounds a wait for a server's ready line. No test depends on
// it: a server that is slow still passes; it only ends a wait on a hang.
const readyGuard = 2 * time.Minute

// StartProcess starts cmd, keeping its stdout and stderr, and returns once
// a line of its output matches ready, with that line's submatches (e.g. a
// port the server bound itself). If the process exits first, the error
// holds its output, which says why (such as "Address already in use").
func StartProcess(cmd *exec.Cmd, ready *regexp.Regexp) (*Process, []string, error) {
	p := &Process{what: cmd.Path, cmd: cmd, out: &watchedOutput{ready: ready, matched: make(chan struct{})},
		exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	dieWithTest(cmd)
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	go func() { cmd.Wait(); close(p.exited) }()
	guard := time.NewTimer(readyGuard)
	defer guard.Stop()
	select {
	case <-p.out.matched:
		return p, p.out.submatch, nil
	case <-p.exited:
		return nil, nil, fmt.Errorf("redistest: %s exited (%v) before it was ready:\n%s", p.what, cmd.ProcessState, p.Output())
	case <-guard.C:
		p.Kill()
		return nil, nil, fmt.Errorf("redistest: %s not ready after %v (hung?):\n%s", p.what, readyGuard, p.Output())
	}
}

// Output is everything the process has written so far.
func (p *Process) Output() string { return p.out.String() }

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Kill stops the process with SIGKILL, as a crash would, and waits for it.
func (p *Process) Kill() { p.Stop(os.Kill) }

// Stop sends sig and waits for the process to exit.
func (p *Process) Stop(sig os.Signal) {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(sig)
	<-p.exited
}

// watchedOutput keeps a process's output and closes matched at the first
// line that matches ready.
type watchedOutput struct {
	mu       sync.Mutex
	b        strings.Builder
	scanned  int // bytes of b already searched for whole lines
	ready    *regexp.Regexp
	matched  chan struct{}
	submatch []string // set before matched closes
}

func (w *watchedOutput) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if w.submatch != nil {
		return len(p), nil
	}
	s := w.b.String()
	for {
		end := strings.IndexByte(s[w.scanned:], '\n')
		if end < 0 {
			return len(p), nil
		}
		line := s[w.scanned : w.scanned+end]
		w.scanned += end + 1
		if m := w.ready.FindStringSubmatch(line); m != nil {
			w.submatch = m
			close(w.matched)
			return len(p), nil
		}
	}
}

func (w *watchedOutput) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
