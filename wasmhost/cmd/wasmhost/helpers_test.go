package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/dist"
)

// syncBuffer collects what the command writes to stdout or stderr.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lines are the complete lines written so far.
func (s *syncBuffer) lines() []string {
	return strings.Split(strings.TrimSuffix(s.String(), "\n"), "\n")
}

// running is the command started by a test, as run() starts it.
type running struct {
	app            *app
	url            string
	stdout, stderr *syncBuffer
}

// startCmd parses args as the command line and starts the command, on
// loopback ports it picks, with the compiled code cached under dist/; the
// test's end stops it.
func startCmd(t *testing.T, args ...string) *running {
	t.Helper()
	r, err := tryStart(t, args...)
	if err != nil {
		t.Fatalf("wasmhost %s: %v\nstderr:\n%s", strings.Join(args, " "), err, r.stderr)
	}
	return r
}

// tryStart is startCmd, returning the error.
func tryStart(t *testing.T, args ...string) (*running, error) {
	t.Helper()
	cache, err := dist.CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"-listen", "127.0.0.1:0", "-admin", "127.0.0.1:0", "-workers", "1", "-compile-cache", cache}
	r := &running{stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	o, err := parseFlags(append(base, args...), r.stderr)
	if err != nil {
		return r, err
	}
	if r.app, err = start(context.Background(), o, r.stdout, r.stderr); err != nil {
		return r, err
	}
	t.Cleanup(func() { r.app.close() })
	r.url = strings.TrimSpace(r.stdout.lines()[0])
	return r, nil
}

// adminURL is the admin listener's base URL.
func (r *running) adminURL() string { return r.app.admin.URL() }

// accessLines are the access log lines written to stdout so far.
func (r *running) accessLines() []string { return r.stdout.lines()[1:] }

// distPath is a module `make build` or `make fixtures` wrote, failing the
// test with how to build it when it is missing.
func distPath(t *testing.T, name string) string {
	t.Helper()
	if _, err := dist.Read(name); err != nil {
		t.Fatal(err)
	}
	dir, _ := dist.Dir()
	return filepath.Join(dir, name)
}

// writeFile writes a file in the test's directory and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

type reply struct {
	status int
	header http.Header
	body   string
}

// get sends a request (a POST when body is not empty) without following
// redirects.
func get(t *testing.T, url, body string, headers map[string]string) reply {
	t.Helper()
	method := "GET"
	var rd io.Reader
	if body != "" {
		method, rd = "POST", strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header, string(b)}
}

// echoed is what an echo upstream (the built-in one, or newEcho's) saw.
type echoed struct {
	URI     string              `json:"uri"`
	Headers map[string][]string `json:"headers"`
	Body    string              `json:"body"`
}

func (r reply) echo(t *testing.T) echoed {
	t.Helper()
	var e echoed
	if err := json.Unmarshal([]byte(r.body), &e); err != nil {
		t.Fatalf("not an echo (status %d): %q", r.status, r.body)
	}
	return e
}

// untilDenied sends requests until one is denied, at most n; it returns
// the replies.
func untilDenied(t *testing.T, url string, headers map[string]string, n int) []reply {
	t.Helper()
	var out []reply
	for range n {
		r := get(t, url, "", headers)
		out = append(out, r)
		if r.status == http.StatusTooManyRequests {
			break
		}
	}
	return out
}
