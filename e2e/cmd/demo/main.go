// Command demo is `make demo`: it runs the built filter in the local wasm
// host (the wasmhost command) with Redis, sends a burst from two users, and
// prints per second what was allowed and denied, and one 429's headers.
// Then a hot key is leased (hot.go), a burst is throttled (throttle.go), and an API key sends chat requests to the demo's LLM-like upstream until
// its token limit denies (tokens.go): per request what it reserved, used
// and had left, and at the end the token rule's metrics. Last, a team
// spends a monthly money budget across two models until a request is
// degraded instead of denied (money.go).
//
// Redis is REDIS_ADDR if set; else a redis-server started on a free port if
// one is installed; else an embedded Redis-compatible server (miniredis),
// with a notice. Everything it starts, it stops: with -keep, Redis once the
// user presses Ctrl-C, so that the ratelimitctl commands it printed can be
// run again (keep.go).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("demo: ")
	wasm := flag.String("wasm", "dist/ratelimit.wasm", "the built filter")
	config := flag.String("config", "e2e/cmd/demo/config.json", "plugin configuration")
	seconds := flag.Int("seconds", 3, "how long to send traffic")
	keep := flag.Bool("keep", false, "keep the demo's Redis running once the demo is over, until Ctrl-C, to run ratelimitctl against it")
	flag.Parse()
	if err := run(*wasm, *config, *seconds, *keep); err != nil {
		log.Fatal(err)
	}
}

func run(wasm, config string, seconds int, keep bool) error {
	addr, functions, stopRedis, err := findRedis()
	if err != nil {
		return err
	}
	defer stopRedis()
	if !functions {
		evalsha, err := withEvalSHA(config)
		if err != nil {
			return err
		}
		defer os.Remove(evalsha)
		config = evalsha
	}

	upstream, stopUpstream, err := startUpstream()
	if err != nil {
		return err
	}
	defer stopUpstream()
	url, stopHost, err := startHost(wasm, config, addr, upstream)
	if err != nil {
		return err
	}
	defer stopHost()
	cfg, _ := os.ReadFile(config)
	fmt.Printf("filter %s in the wasm host at %s, Redis at %s\nconfiguration:\n%s\n", wasm, url, addr, cfg)

	// alice sends 20 requests a second, bob 4: the per-user limits are 5 per
	// second and 12 per 10 seconds.
	users := map[string]int{"alice": 20, "bob": 4}
	fmt.Printf("Burst: alice sends 20 requests a second and bob 4, for %d s, on rule \"per-user\"\n", seconds)
	fmt.Printf("(each user: 5 a second and 12 per 10 s). Per second, what each sent, and how many were allowed and denied:\n\n")
	tally := newTally()
	var wg sync.WaitGroup
	start := time.Now()
	for user, rate := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(time.Second / time.Duration(rate))
			defer tick.Stop()
			for range tick.C {
				elapsed := time.Since(start)
				if elapsed >= time.Duration(seconds)*time.Second {
					return
				}
				tally.record(int(elapsed/time.Second), user, send(url, user))
			}
		}()
	}
	wg.Wait()
	tally.print(seconds)

	if err := plansPhase(url, addr, config); err != nil {
		return err
	}

	hot, err := hotPhase(url)
	if err != nil {
		return err
	}
	if err := throttlePhase(url); err != nil {
		return err
	}
	sum, err := tokenPhase(url, addr)
	if err != nil {
		return err
	}
	if err := moneyPhase(url, addr); err != nil {
		return err
	}
	hostLog := stopHost()
	printLeaseMetrics(hostLog, hot)
	printTokenMetrics(hostLog, sum)
	printMoneyMetrics(hostLog)
	afterDemo(addr, config, keep)
	return nil
}

type response struct {
	status  int
	headers http.Header
	body    string
}

func send(url, user string) response {
	req, _ := http.NewRequest("GET", url+"/api/orders", nil)
	req.Header.Set("x-user-id", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{status: -1, body: err.Error()}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, headers: resp.Header, body: string(body)}
}

type tally struct {
	mu       sync.Mutex
	counts   map[string]map[int][2]int // user -> second -> {allowed, denied}
	other    []string
	rejected *response
}

func newTally() *tally { return &tally{counts: map[string]map[int][2]int{}} }

func (t *tally) record(second int, user string, r response) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.counts[user] == nil {
		t.counts[user] = map[int][2]int{}
	}
	c := t.counts[user][second]
	switch r.status {
	case 200:
		c[0]++
	case 429:
		c[1]++
		if t.rejected == nil {
			t.rejected = &r
		}
	default:
		t.other = append(t.other, fmt.Sprintf("%s: %d %s", user, r.status, r.body))
	}
	t.counts[user][second] = c
}

func (t *tally) print(seconds int) {
	users := make([]string, 0, len(t.counts))
	for u := range t.counts {
		users = append(users, u)
	}
	sort.Strings(users)
	fmt.Printf("%-8s", "second")
	for _, u := range users {
		fmt.Printf("  %-26s", u+": sent allowed denied")
	}
	fmt.Println()
	totals := map[string][2]int{}
	row := func(label string, counts func(u string) [2]int) {
		fmt.Printf("%-8s", label)
		for _, u := range users {
			c := counts(u)
			fmt.Printf("  %-26s", fmt.Sprintf("%*d %7d %6d", len(u)+6, c[0]+c[1], c[0], c[1]))
		}
		fmt.Println()
	}
	for s := 0; s < seconds; s++ {
		row(fmt.Sprint(s+1), func(u string) [2]int {
			c, sum := t.counts[u][s], totals[u]
			totals[u] = [2]int{sum[0] + c[0], sum[1] + c[1]}
			return c
		})
	}
	row("total", func(u string) [2]int { return totals[u] })
	for _, o := range t.other {
		fmt.Println("unexpected:", o)
	}
	if t.rejected != nil {
		fmt.Println("\none 429, as the client saw it:")
		var names []string
		for k := range t.rejected.headers {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			fmt.Printf("  %s: %s\n", k, strings.Join(t.rejected.headers[k], ", "))
		}
		fmt.Printf("  body: %s", t.rejected.body)
	}
}

// findRedis picks the Redis to use, with the filter's library loaded
// (functions) unless it is the embedded server, and returns how to stop
// what it started.
func findRedis() (addr string, functions bool, stop func(), err error) {
	if addr := os.Getenv("REDIS_ADDR"); addr != "" {
		c := redistest.NewClient(addr, redistest.Options{})
		defer c.Close()
		if err := redistest.LoadLibrary(c); err != nil {
			return "", false, nil, fmt.Errorf("%w: load it with `go run ./cmd/ratelimitctl --redis %s install`", err, addr)
		}
		return addr, true, func() {}, nil
	}
	if _, err := exec.LookPath("redis-server"); err == nil {
		s, err := redistest.StartServer()
		if err != nil {
			return "", false, nil, err
		}
		return s.Addr, true, s.Stop, nil
	}
	log.Print("NOTICE: no REDIS_ADDR and no redis-server on PATH; using an embedded Redis-compatible server (miniredis), which has no Redis Functions: the filter sends EVALSHA (redis.command: evalsha). Tests always use a real redis-server.")
	m, err := miniredis.Run()
	if err != nil {
		return "", false, nil, err
	}
	return m.Addr(), false, m.Close, nil
}

// withEvalSHA writes config with redis.command set to evalsha to a
// temporary file and returns its path.
func withEvalSHA(config string) (string, error) {
	b, err := os.ReadFile(config)
	if err != nil {
		return "", err
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		return "", fmt.Errorf("%s: %w", config, err)
	}
	r, _ := c["redis"].(map[string]any)
	if r == nil {
		return "", fmt.Errorf("%s: no redis object", config)
	}
	r["command"] = "evalsha"
	if b, err = json.Marshal(c); err != nil {
		return "", err
	}
	f, err := os.CreateTemp("", "demo-config-*.json")
	if err != nil {
		return "", err
	}
	defer f.Close()
	_, err = f.Write(b)
	return f.Name(), err
}

// startHost builds and runs the wasmhost command in front of upstream,
// returning its URL and how to stop it; stopping returns what it logged,
// ending with its metrics.
func startHost(wasm, config, redisAddr, upstream string) (string, func() string, error) {
	dir, err := os.MkdirTemp("", "demo")
	if err != nil {
		return "", nil, err
	}
	bin := filepath.Join(dir, "wasmhost")
	if out, err := exec.Command("go", "build", "-o", bin, "./wasmhost/cmd/wasmhost").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("building wasmhost: %v\n%s", err, out)
	}
	// No access log: stdout is read for the URL only. No admin listener.
	cmd := exec.Command(bin, "-wasm", wasm, "-config", config, "-redis", redisAddr, "-upstream", upstream,
		"-listen", "127.0.0.1:0", "-access-log", "", "-admin", "")
	logs, err := os.Create(filepath.Join(dir, "wasmhost.log"))
	if err != nil {
		return "", nil, err
	}
	cmd.Stderr = logs
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	var once sync.Once
	var logged string
	stop := func() string {
		once.Do(func() {
			cmd.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				cmd.Process.Kill()
				<-done
			}
			logs.Close()
			b, _ := os.ReadFile(logs.Name())
			logged = string(b)
			os.RemoveAll(dir)
		})
		return logged
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return "", nil, fmt.Errorf("wasmhost did not start: %v\n%s", err, stop())
	}
	return strings.TrimSpace(line), stop, nil
}
