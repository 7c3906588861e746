package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"time"
	_ "time/tzdata" // the reset is printed in Europe/Berlin on any machine

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// The money phase: a team spends its monthly budget in micro-dollars
// (rule "team-spend" of config.json: a calendar month in Europe/Berlin)
// across two models, each response charged its tokens at its model's
// prices. What is left is read at the filter's quota endpoint. Once the
// budget is spent, the next request is degraded, not denied: it goes on
// to the upstream with x-ratelimit-exhausted.

const (
	team        = "research"
	moneyRule   = "team-spend" // its limit is named "month"
	moneyLimit  = 50000        // micro-dollars: $0.05 a month, spent in a few requests
	quotaPath   = "/v1/quota"
	moneyReserv = 1000 // the rule's reserve default, in output tokens
)

// centiPrices are the rule's prices, in hundredths of a micro-dollar per
// token (= US$ per million tokens × 100): input, output.
var centiPrices = map[string][2]int64{"gpt-4o": {250, 1000}, "o3-mini": {110, 440}}

type moneyTurn struct {
	model string
	chatTurn
}

// The turns, sent in order until one is degraded.
var moneyTurns = []moneyTurn{
	{"gpt-4o", chatTurn{prompt: "Summarise the design review, in about 1000 tokens.", maxTokens: 1500}},
	{"o3-mini", chatTurn{prompt: "Plan the migration step by step, about 3000 tokens.", stream: true, maxTokens: 4000}},
	{"gpt-4o", chatTurn{prompt: "Draft the release notes, about 2000 tokens.", stream: true}},
	{"o3-mini", chatTurn{prompt: "Check the plan for gaps, about 1000 tokens."}},
	{"gpt-4o", chatTurn{prompt: "One more summary, about 500 tokens."}},
	{"o3-mini", chatTurn{prompt: "And a last check, about 500 tokens."}},
}

// moneyQuota is the one limit of moneyRule, as the quota endpoint shows it.
type moneyQuota struct {
	Used, Remaining, Reset int64
}

func moneyPhase(url, redisAddr string) error {
	rdb := redistest.NewClient(redisAddr, redistest.Options{})
	defer rdb.Close()
	// A REDIS_ADDR may hold an earlier run's month: start from nothing.
	if _, err := rdb.Do("DEL", "demo:{"+moneyRule+"|"+team+"}:0"); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	q, err := readMoneyQuota(url)
	if err != nil {
		return err
	}
	fmt.Printf("\nmoney: team %s (x-team) has %d micro-dollars ($0.05) per calendar month in Europe/Berlin\n", team, moneyLimit)
	fmt.Printf("(rule %q). Each response is charged its tokens at its model's price per million tokens:\n", moneyRule)
	fmt.Printf("gpt-4o $2.50 in, $10 out; o3-mini $1.10 in, $4.40 out (request header x-model). A request\n")
	fmt.Printf("reserves x-max-tokens (or %d) output tokens and its size/4 input tokens; the settle charges\n", moneyReserv)
	fmt.Printf("the difference. \"remaining\" is read at the filter's quota endpoint (GET %s) once the\n", quotaPath)
	fmt.Printf("response has settled; the charge is the change in what it shows as used.\n\n")
	fmt.Printf("%-3s %-5s %-8s %-7s %-12s %-16s %s\n", "#", "body", "model", "status", "tokens", "charged (µ$)", "remaining (µ$)")

	spent := int64(0)
	for i, t := range moneyTurns {
		h := map[string]string{"x-team": team, "x-model": t.model}
		reserve := int64(moneyReserv)
		if t.maxTokens > 0 {
			h["x-max-tokens"] = fmt.Sprint(t.maxTokens)
			reserve = t.maxTokens
		}
		r := postChat(url, t.model, t.chatTurn, h)
		kind := "json"
		if t.stream {
			kind = "sse"
		}
		degraded := r.header.Get(sawExhausted)
		tokens, want := "-", int64(0)
		if r.usage != nil {
			tokens = fmt.Sprintf("%d+%d", r.usage.PromptTokens, r.usage.CompletionTokens)
			if degraded == "" && r.status == http.StatusOK {
				want = moneyCost(t.model, r.usage)
			}
		}
		before := q.Used
		for deadline := time.Now().Add(settleWait); ; time.Sleep(5 * time.Millisecond) {
			if q, err = readMoneyQuota(url); err != nil || q.Used == spent+want || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			return err
		}
		spent += want
		charged := fmt.Sprint(q.Used - before)
		if q.Used-before != want {
			charged += fmt.Sprintf(" (priced %d)", want)
		}
		status := fmt.Sprint(r.status)
		if r.err != "" {
			status = r.err
		}
		fmt.Printf("%-3d %-5s %-8s %-7s %-12s %-16s %d\n", i+1, kind, t.model, status, tokens, charged, q.Remaining)
		if degraded != "" {
			berlin, _ := time.LoadLocation("Europe/Berlin")
			fmt.Printf("\nthe quota endpoint's reset: the month's budget is back at %s\n",
				time.Now().Add(time.Duration(q.Reset)*time.Second).In(berlin).Format("Mon 2 Jan 2006 15:04 MST"))
			fmt.Printf("\nrequest %d reserves %d %s output tokens (%d µ$, and its input), more than the %d µ$ left:\n",
				i+1, reserve, t.model, reserve*centiPrices[t.model][1]/100, q.Remaining)
			fmt.Printf("it is degraded instead ")
			fmt.Printf("of denied (\"on_limit\": {\"action\": \"degrade\"}), and charged nothing.\n")
			fmt.Printf("The upstream received\n")
			fmt.Printf("  x-ratelimit-exhausted: %s\n", degraded)
			fmt.Printf("routed to fallback: yes. The header reached the upstream; the wasm host routes by path only, so\n")
			fmt.Printf("the same upstream answered. In Envoy a route on that header sends it to a cheaper model's\n")
			fmt.Printf("cluster (deploy/envoy-degrade.yaml).\n")
			return nil
		}
		if r.status != http.StatusOK {
			fmt.Printf("\nrequest %d: %s\n", i+1, r.body)
			return nil
		}
	}
	fmt.Println("\nthe budget was not spent: no request was degraded")
	return nil
}

// moneyCost is what the rule charges for usage at model's prices: the
// exact sum, rounded up once.
func moneyCost(model string, u *chatUsage) int64 {
	p := centiPrices[model]
	return (u.PromptTokens*p[0] + u.CompletionTokens*p[1] + 99) / 100
}

// readMoneyQuota asks the quota endpoint what the team has left.
func readMoneyQuota(url string) (moneyQuota, error) {
	req, _ := http.NewRequest("GET", url+quotaPath, nil)
	req.Header.Set("x-team", team)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return moneyQuota{}, fmt.Errorf("quota endpoint: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var body struct {
		Rules []struct {
			Rule   string
			Limits []moneyQuota
		}
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &body) != nil || len(body.Rules) != 1 ||
		body.Rules[0].Rule != moneyRule || len(body.Rules[0].Limits) != 1 {
		return moneyQuota{}, fmt.Errorf("quota endpoint: %d %s", resp.StatusCode, b)
	}
	return body.Rules[0].Limits[0], nil
}

var moneyMetric = regexp.MustCompile(`ratelimit\.rule\.` + moneyRule + `\.([a-z_]+):(-?\d+)`)

// printMoneyMetrics prints the money rule's metrics from the host's log.
func printMoneyMetrics(hostLog string) {
	m := hostMetrics(hostLog, moneyMetric)
	fmt.Printf("\nmoney metrics, as the host reported them at shutdown (ratelimit.rule.%s.*, in µ$):\n", moneyRule)
	fmt.Printf("  allowed %d, degraded %d, units_charged %d, units_refunded %d\n",
		m["allowed"], m["degraded"], m["units_charged"], m["units_refunded"])
}
