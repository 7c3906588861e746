package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/dist"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// The README's quick start and recipes, and those of docs/ai-budgets.md
// and docs/jsonrpc.md, run as written: each set-up block
// (```sh) is pasted into bash and each session (```console) is typed,
// against a real redis-server and the dist/ tools, and every output line
// must be the one the README shows. Only addresses are changed (Redis,
// the listener and the admin port get free ones), times that move with
// the clock are compared as numbers (t=, retry_after, retry_after_ms,
// reset, durations), as is
// the epoch counter, and column padding as one space. A run the machine
// was too slow for is repeated (readme_attempt_test.go).
func TestREADMERunsAsWritten(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed (.ci/deps installs it)")
	}
	dir, err := dist.Dir()
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"wasmhost", "ratelimitctl", dist.Higress} {
		if _, err := os.Stat(filepath.Join(dir, tool)); err != nil {
			t.Fatalf("%s: run `make build` first (make test does): %v", tool, err)
		}
	}
	recipes := readmeRecipes(t, "../README.md")
	if len(recipes) < 6 {
		t.Fatalf("%d runnable sections in README.md, want the quick start and 5 recipes", len(recipes))
	}
	// The stock build's local run: Webdis with the shipped configuration,
	// and the shipped envoy.yaml.
	if !slices.ContainsFunc(recipes, func(r recipe) bool {
		return strings.Contains(r.setup, "\nwebdis deploy/") && strings.Contains(r.setup, "\ndist/wasmhost -envoy envoy.yaml ")
	}) {
		t.Error("README.md: no runnable block starts Webdis from deploy/ and runs envoy.yaml's stock build in wasmhost")
	}
	// Pages whose recipes run the same way, in the quick start's set-up.
	for _, page := range []string{"../docs/ai-budgets.md", "../docs/jsonrpc.md"} {
		more := readmeRecipes(t, page)
		if len(more) == 0 {
			t.Fatalf("%s: no recipe found", page)
		}
		recipes = append(recipes, more...)
	}
	srv := redistest.Start(t)
	for _, r := range recipes {
		t.Run(r.name, func(t *testing.T) { runRecipe(t, dir, srv, r) })
	}
}

// recipe is a set-up block and the session typed after it.
type recipe struct {
	file     string // as the messages name it
	name     string
	setup    string
	commands []command
}

type command struct {
	line string // as typed, without "$ "
	want []string
	at   int // README line
}

// readmeRecipes finds the quick start's blocks and those after each
// "<!-- recipe: name -->" marker.
func readmeRecipes(t *testing.T, path string) []recipe {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []recipe
	var cur *recipe
	var block []string
	lang, name := "", ""
	marker := regexp.MustCompile(`^<!-- recipe: ([a-z0-9-]+) -->$`)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case lang == "" && strings.HasPrefix(line, "## Quick start"):
			name = "quick-start"
		case lang == "" && marker.MatchString(line):
			name = marker.FindStringSubmatch(line)[1]
		case lang == "" && strings.HasPrefix(line, "```"):
			lang, block = strings.TrimPrefix(line, "```"), nil
		case lang != "" && line == "```":
			switch {
			case lang == "sh" && name != "":
				out = append(out, recipe{file: strings.TrimPrefix(path, "../"), name: name, setup: strings.Join(block, "\n")})
				cur, name = &out[len(out)-1], ""
			case lang == "console" && cur != nil:
				cur.commands = parseSession(block, n-len(block))
				cur = nil
			}
			lang = ""
		case lang != "":
			block = append(block, line)
		}
	}
	for _, r := range out {
		if len(r.commands) == 0 {
			t.Fatalf("%s: %s has no session (```console) after its set-up", r.file, r.name)
		}
	}
	return out
}

func parseSession(lines []string, first int) []command {
	var cmds []command
	for i, l := range lines {
		if c, ok := strings.CutPrefix(l, "$ "); ok {
			cmds = append(cmds, command{line: c, at: first + i})
		} else if len(cmds) > 0 {
			cmds[len(cmds)-1].want = append(cmds[len(cmds)-1].want, l)
		}
	}
	return cmds
}

func runRecipe(t *testing.T, distDir string, srv *redistest.Server, r recipe) {
	t.Helper()
	before, err := snapshotKeys(srv)
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; ; n++ {
		a := runRecipeOnce(t, distDir, srv.Addr, r)
		switch {
		case len(a.mismatches) == 0:
			return
		case a.why == "" || n == maxRecipeAttempts:
			for _, m := range a.mismatches {
				t.Error(m)
			}
			if a.why != "" {
				t.Errorf("%d attempts, each too slow to prove anything: %s", n, a.why)
			}
			return
		}
		t.Logf("attempt %d proves nothing (%s), running it again: %s", n, a.why, a.mismatches[0])
		if err := restoreKeys(srv, before); err != nil {
			t.Fatal(err)
		}
	}
}

// runRecipeOnce runs a recipe in a folder of its own, whose dist/ is the
// built one (the README's commands run at the root of a clone), and stops
// what it started.
func runRecipeOnce(t *testing.T, distDir, redisAddr string, r recipe) recipeAttempt {
	work := cloneRoot(t, distDir)
	if !strings.Contains(r.setup, "mkdir -p dist/quickstart") {
		// A recipe follows the quick start, which made the folder.
		if err := os.Mkdir(filepath.Join(work, "dist", "quickstart"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	listen, admin, webdis := freeAddr(t), freeAddr(t), freeAddr(t)
	cache := filepath.Join(distDir, "cache")
	rewrite := strings.NewReplacer("localhost:8080", listen, "localhost:9901", admin,
		"localhost:7379", webdis, "127.0.0.1:7379", webdis)
	var script []string
	for _, line := range strings.Split(r.setup, "\n") {
		switch {
		case strings.HasPrefix(line, "make build"), strings.HasPrefix(line, "redis-server "):
			continue // done by make test and by redistest
		case strings.HasPrefix(line, "webdis "):
			// The shipped configuration, in front of the test's Redis.
			file, redirect, _ := strings.Cut(strings.TrimPrefix(line, "webdis "), " > ")
			line = fmt.Sprintf("webdis %s > %s\necho $! > webdis.pid", localWebdis(t, work, file, redisAddr, webdis),
				strings.TrimSpace(strings.SplitN(redirect, "#", 2)[0]))
		case strings.HasPrefix(line, "dist/wasmhost "):
			// The address flags go in, and the process's id comes out.
			cmd, redirect, _ := strings.Cut(line, " > ")
			line = fmt.Sprintf("%s -redis %s -listen %s -admin %s -compile-cache %s > %s\necho $! > wasmhost.pid",
				cmd, redisAddr, listen, admin, cache, strings.TrimSpace(strings.SplitN(redirect, "#", 2)[0]))
		}
		script = append(script, rewrite.Replace(line))
	}
	defer func() {
		stopPID(t, filepath.Join(work, "wasmhost.pid"))
		stopPID(t, filepath.Join(work, "webdis.pid"))
	}()
	if out, err := bash(work, redisAddr, strings.Join(script, "\n"), 2*time.Minute); err != nil {
		t.Fatalf("set-up of %s: %v\n%s\n%s", r.name, err, out, readFile(filepath.Join(work, "wasmhost.log")))
	}
	var a recipeAttempt
	for _, c := range r.commands {
		began := time.Now()
		got, err := bash(work, redisAddr, rewrite.Replace(c.line), time.Minute)
		took := time.Since(began)
		if err != nil && len(c.want) > 0 {
			a.mismatches = append(a.mismatches, fmt.Sprintf("%s:%d: $ %s: %v", r.file, c.at, c.line, err))
		}
		gotLines := strings.Split(strings.TrimRight(got, "\n"), "\n")
		if got == "" {
			gotLines = nil
		}
		if normalized(gotLines) != normalized(c.want) {
			a.mismatches = append(a.mismatches, fmt.Sprintf("%s:%d: $ %s\ngot:\n%s\nthe page shows:\n%s", r.file, c.at, c.line,
				strings.Join(gotLines, "\n"), strings.Join(c.want, "\n")))
			if took > time.Second && a.why == "" {
				a.why = fmt.Sprintf("the command took %v, and a recipe's limits may count a second", took.Round(time.Millisecond))
			}
		}
	}
	if len(a.mismatches) > 0 {
		if n := redisErrors(admin); n > 0 {
			a.why = fmt.Sprintf("ratelimit.redis.errors %d: a call to the test's Redis failed or timed out", n)
		}
	}
	return a
}

// cloneRoot is a folder standing for a clone's root: dist/ holds links to
// the built files (so that what the README writes there stays in the
// test's folder), and envoy.yaml and deploy/ are the repository's.
func cloneRoot(t *testing.T, distDir string) string {
	t.Helper()
	work := t.TempDir()
	entries, err := os.ReadDir(distDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(work, "dist"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(distDir, e.Name()), filepath.Join(work, "dist", e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"envoy.yaml", "deploy"} {
		abs, err := filepath.Abs(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(abs, filepath.Join(work, f)); err != nil {
			t.Fatal(err)
		}
	}
	return work
}

// localWebdis writes the README's Webdis configuration (file, from the
// repository's root) with only its addresses changed: Redis at redisAddr,
// and listening at addr. It returns the written file.
func localWebdis(t *testing.T, work, file, redisAddr, addr string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", file))
	if err != nil {
		t.Fatal(err)
	}
	var conf map[string]any
	if err := json.Unmarshal(data, &conf); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	rhost, rport, _ := net.SplitHostPort(redisAddr)
	host, port, _ := net.SplitHostPort(addr)
	conf["redis_host"], conf["redis_port"] = rhost, json.Number(rport)
	conf["http_host"], conf["http_port"] = host, json.Number(port)
	out := filepath.Join(work, "webdis-test.json")
	b, _ := json.Marshal(conf)
	if err := os.WriteFile(out, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

// bash runs script in dir with ratelimitctl pointed at Redis.
func bash(dir, redisAddr, script string, timeout time.Duration) (string, error) {
	cmd := exec.Command("bash", "-e", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RATELIMITCTL_REDIS="+redisAddr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
		return string(out), err
	case <-time.After(timeout):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return string(out), fmt.Errorf("still running after %v", timeout)
	}
}

// Times are compared as numbers: they move with the clock.
var clockValues = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`t=\d+`), "t=N"},
	{regexp.MustCompile(`"retry_after":\d+`), `"retry_after":N`},
	{regexp.MustCompile(`"retry_after_ms":\d+`), `"retry_after_ms":N`},
	{regexp.MustCompile(`"reset":\d+`), `"reset":N`},
	{regexp.MustCompile(`\b(\d+(\.\d+)?(h|ms|m|s))+\b`), "D"},
	{regexp.MustCompile(`epoch = \d+`), "epoch = N"},
	{regexp.MustCompile(`[ \t]+`), " "},
}

func normalized(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		l = strings.TrimRight(l, " \r")
		for _, c := range clockValues {
			l = c.re.ReplaceAllString(l, c.with)
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

// freeAddr is an address held for a server the test runs: wasmhost's
// listener (Go's, with SO_REUSEADDR) can bind it, nothing else can.
func freeAddr(t *testing.T) string {
	t.Helper()
	return redistest.HoldPort(t).Addr()
}

func stopPID(t *testing.T, file string) {
	b, err := os.ReadFile(file)
	if err != nil {
		return
	}
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err == nil && pid > 0 {
		syscall.Kill(pid, syscall.SIGTERM)
		for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
			time.Sleep(50 * time.Millisecond)
		}
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
