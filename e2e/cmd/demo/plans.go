package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
)

// The plans phase: tenant acme's requests meet the "plans" rule of
// config.json, whose tier an operator assigns in Redis. acme runs out of
// the free tier; the operator moves it to pro with ratelimitctl, then
// gives it an override for a minute, and each change is in force on the
// next request once the VMs have read the epoch (within a second).

const (
	tenant     = "acme"
	plansRule  = "plans"
	epochWait  = 1500 * time.Millisecond // one tick (1 s) and a round trip, with room
	ctlPackage = "./cmd/ratelimitctl"
)

func plansPhase(url, redisAddr, config string) error {
	fmt.Printf("\nPlans: tenant %s on rule %q, tier from Redis (free: 3 a minute, pro: 6), changed with ratelimitctl\n", tenant, plansRule)
	ctl, cleanup, err := buildCtl()
	if err != nil {
		return err
	}
	defer cleanup()
	run := func(args ...string) error {
		all := append([]string{"--config", config, "--redis", redisAddr}, args...)
		fmt.Printf("\n$ ratelimitctl %s\n", strings.Join(quoteArgs(all), " "))
		out, err := exec.Command(ctl, all...).CombinedOutput()
		fmt.Print(indent(string(out)))
		return err
	}
	// A REDIS_ADDR may hold an earlier run's state: start from nothing.
	if err := run("reset", "--all", "--rule", plansRule, tenant); err != nil {
		return err
	}
	time.Sleep(epochWait)
	sendPlans(url, 4)
	if err := run("tier", "set", "--rule", plansRule, "--tier", "pro", tenant); err != nil {
		return err
	}
	time.Sleep(epochWait)
	sendPlans(url, 4)
	if err := run("override", "set", "--rule", plansRule, "--ttl", "1m",
		"--limits", `[{"algorithm":"sliding_log","limit":20,"window":"1m"}]`, tenant); err != nil {
		return err
	}
	time.Sleep(epochWait)
	sendPlans(url, 2)
	return run("show", "--rule", plansRule, tenant)
}

// sendPlans sends n requests as the tenant, printing what each got.
func sendPlans(url string, n int) {
	fmt.Println()
	for range n {
		req, _ := http.NewRequest("GET", url+"/plans/report", nil)
		req.Header.Set("x-tenant", tenant)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Printf("  error: %v\n", err)
			continue
		}
		resp.Body.Close()
		fmt.Printf("  GET /plans/report  %d  RateLimit: %s\n", resp.StatusCode, resp.Header.Get("RateLimit"))
	}
}

// buildCtl builds ratelimitctl, as an operator would install it.
func buildCtl() (string, func(), error) {
	dir, err := os.MkdirTemp("", "demo-ctl")
	if err != nil {
		return "", nil, err
	}
	bin := dir + "/ratelimitctl"
	if out, err := exec.Command("go", "build", "-o", bin, ctlPackage).CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("building ratelimitctl: %v\n%s", err, out)
	}
	return bin, func() { os.RemoveAll(dir) }, nil
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, ` "'[{`) {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return out
}

func indent(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("  " + line + "\n")
	}
	return b.String()
}
