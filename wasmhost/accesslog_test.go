package wasmhost_test

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// lockedBuffer is a bytes.Buffer written by the host and read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSuffix(l.b.String(), "\n"), "\n")
}

var accessLine = regexp.MustCompile(`^\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\] "(\S+) (\S+) (\S+)" (\d+) (\S+) (\d+) (\d+) (\d+) client=(\S+) upstream=(\S+) rl="(.*)"$`)

// One line per request, written before the client has the response's end,
// with the decision the guest set as a property (quoted, escaped), or "-".
func TestAccessLogLine(t *testing.T) {
	up := newUpstream(t)
	var log lockedBuffer
	h := start(t, wasmhost.Config{Module: module(t, "probe"), Upstream: up.URL, Workers: 1,
		UseRemoteAddress: true, AccessLog: &log})

	do(t, "POST", h.URL()+"/a?x=1", "hello", map[string]string{"x-probe-decision": `rule=api decision=allowed "q"`})
	do(t, "GET", h.URL()+"/denied", "", map[string]string{"x-probe-mode": "local"})
	lines := log.lines()
	if len(lines) != 2 {
		t.Fatalf("access log has %d lines, want 2:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	first := accessLine.FindStringSubmatch(lines[0])
	if first == nil {
		t.Fatalf("line does not match the documented format: %q", lines[0])
	}
	want := []string{"POST", "/a?x=1", "HTTP/1.1", "200", "via_upstream", "5"}
	for i, w := range want {
		if first[i+1] != w {
			t.Errorf("field %d = %q, want %q (line %q)", i+1, first[i+1], w, lines[0])
		}
	}
	if first[7] == "0" || !strings.HasPrefix(first[9], "127.0.0.1:") || first[10] == "-" {
		t.Errorf("bytes sent, client or upstream missing: %q", lines[0])
	}
	if got := first[11]; got != `rule=api decision=allowed \x22q\x22` {
		t.Errorf("rl = %q, want the property with its quotes escaped", got)
	}
	second := accessLine.FindStringSubmatch(lines[1])
	if second == nil || second[4] != "429" || second[10] != "-" || second[11] != "-" {
		t.Errorf("local reply line %q: want status 429, upstream -, rl -", lines[1])
	}
}

// The connection manager's path settings apply before the guest runs: a
// redirect or a rejection never reaches it, a normalized path does.
func TestPathNormalizedBeforeTheGuest(t *testing.T) {
	up := newUpstream(t)
	var log lockedBuffer
	h := start(t, wasmhost.Config{Module: module(t, "probe"), Upstream: up.URL, Workers: 1, AccessLog: &log,
		NormalizePath: true, MergeSlashes: true, EscapedSlashes: wasmhost.UnescapeAndRedirect})
	client := noRedirectClient()

	r := doWith(t, client, "GET", h.URL()+"/a%2Fb/../c?q=%2F", nil)
	if r.status != 307 || r.header.Get("Location") != "/a/c?q=%2F" {
		t.Errorf("escaped slash: %d Location %q, want 307 to /a/c?q=%%2F", r.status, r.header.Get("Location"))
	}
	r = doWith(t, client, "GET", h.URL()+"//x/./y/%7Euser/%41/../z", nil)
	if r.status != 200 || r.echo(t).URI != "/x/y/~user/z" {
		t.Errorf("normalized: %d %q, want 200 with /x/y/~user/z upstream", r.status, r.body)
	}
	if got := r.header.Get("X-Prop-Request-Path"); got != "/x/y/~user/z" {
		t.Errorf("the guest saw request.path %q", got)
	}
	if n := up.calls.Load(); n != 1 {
		t.Errorf("upstream calls %d, want 1 (the redirect goes back to the client)", n)
	}
	if got := len(h.GuestLogs(wasmhost.LogInfo)); got == 0 {
		t.Fatal("the guest logged nothing")
	}
	for _, m := range h.GuestLogs(wasmhost.LogInfo) {
		if strings.Contains(m, "%2F") {
			t.Errorf("the guest saw the redirected request: %q", m)
		}
	}
	lines := log.lines()
	if len(lines) != 2 || !strings.Contains(lines[0], `"GET /a/c?q=%2F HTTP/1.1" 307 path_normalization_failed`) {
		t.Errorf("access log:\n%s", strings.Join(lines, "\n"))
	}
}

// With every setting off (the library's default, as Envoy's), the path is
// left as the client sent it.
func TestPathUnchangedByDefault(t *testing.T) {
	up := newUpstream(t)
	h := start(t, wasmhost.Config{Module: module(t, "probe"), Upstream: up.URL, Workers: 1})
	r := doWith(t, noRedirectClient(), "GET", h.URL()+"//a%2Fb/../c", nil)
	if r.status != 200 || r.echo(t).URI != "//a%2Fb/../c" {
		t.Errorf("%d %q, want the path unchanged", r.status, r.body)
	}
}

// noRedirectClient returns redirects to the test instead of following them.
func noRedirectClient() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// doWith sends a request without a body through c and reads the response.
func doWith(t *testing.T, c *http.Client, method, url string, headers map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
}
