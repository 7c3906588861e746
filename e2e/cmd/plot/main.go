// Command plot sends the same burst through the filter for each algorithm
// and draws what was allowed and denied, per 100 ms, as an SVG: `make bench`
// writes docs/burst.svg with it.
//
//	go run ./e2e/cmd/plot -out docs/burst.svg
//
// For each algorithm it starts the e2e wazero host (two VMs) with a
// configuration holding one limit of -limit requests per second (for the
// funnel: capacity -limit, draining -limit per second; for the concurrency
// limit, -limit/10 in flight, each held 100 ms by the upstream), and sends one key
// -factor times that rate for -seconds, on a fixed schedule, to a real
// redis-server (started here, or -redis). It builds the filter from this
// module unless -wasm names a built one.
package main

import (
	"context"
	"flag"
	"fmt"
	"html"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/e2e/bench"
	"github.com/redisrate/envoy-redis-ratelimit/internal/dist"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

const bucket = 100 * time.Millisecond

// algorithm is one panel of the plot.
type algorithm struct {
	name, limit string // limit is the JSON of the rule's one limit
	note        string
	hold        bool     // the upstream holds each request holdFor: a concurrency limit's panel
	outage      bool     // Redis, its own, stops a third of the way: failure_mode local's panel
	lease       bool     // the rule leases batches of leaseBatch: the leases' panel
	throttle    bool     // the rule holds up to throttleDelay: bars by when each was answered
	buckets     [][2]int // allowed, denied
	other       int      // answers that were neither 200 nor 429
	allowed     int
	total       int
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("plot: ")
	out := flag.String("out", "docs/burst.svg", "SVG file to write")
	wasmPath := flag.String("wasm", "", "built filter (Higress build); empty for dist/ratelimit-higress.wasm")
	redisAddr := flag.String("redis", "", "Redis address; empty to start a redis-server")
	limit := flag.Int("limit", 50, "requests per second each algorithm allows")
	factor := flag.Float64("factor", 5, "the burst's rate, in multiples of the limit")
	seconds := flag.Float64("seconds", 3, "how long the burst lasts")
	flag.Parse()
	if err := run(*out, *wasmPath, *redisAddr, *limit, *factor, time.Duration(*seconds*float64(time.Second))); err != nil {
		log.Fatal(err)
	}
}

func run(out, wasmPath, redisAddr string, limit int, factor float64, d time.Duration) error {
	ctx := context.Background()
	var wasm []byte
	var err error
	if wasmPath != "" {
		wasm, err = os.ReadFile(wasmPath)
	} else {
		wasm, err = dist.Read(dist.Higress)
	}
	if err != nil {
		return err
	}
	mod, err := wasmhost.Compile(ctx, wasm, wasmhost.WithCacheDir(filepath.Join(os.TempDir(), "e2e-bench-wazero-cache")))
	if err != nil {
		return err
	}
	defer mod.Close(ctx)
	if redisAddr == "" {
		srv, err := redistest.StartServer()
		if err != nil {
			return err
		}
		defer srv.Stop()
		redisAddr = srv.Addr
	}
	upstream, stopUpstream, err := startUpstream()
	if err != nil {
		return err
	}
	defer stopUpstream()

	algos := []*algorithm{
		{name: "sliding_log", limit: fmt.Sprintf(`{"algorithm":"sliding_log","limit":%d,"window":"1s"}`, limit),
			note: fmt.Sprintf("exact: at most %d in any 1 s window", limit)},
		{name: "sliding_counter", limit: fmt.Sprintf(`{"algorithm":"sliding_counter","limit":%d,"window":"1s"}`, limit),
			note: fmt.Sprintf("approximate: %d per 1 s, the previous second weighted", limit)},
		{name: "funnel", limit: fmt.Sprintf(`{"algorithm":"funnel","capacity":%d,"rate":%d,"period":"1s"}`, limit, limit),
			note: fmt.Sprintf("GCRA: a burst of %d, then %d per second", limit, limit)},
		{name: "concurrency", hold: true,
			limit: fmt.Sprintf(`{"algorithm":"concurrency","limit":%d,"max_duration":"1m"}`, slotsFor(limit)),
			note:  fmt.Sprintf("at most %d in flight, each held %v by the upstream: %d per second", slotsFor(limit), holdFor, limit)},
		{name: "local fallback", outage: true, limit: fmt.Sprintf(`{"algorithm":"sliding_log","limit":%d,"window":"1s"}`, limit),
			note: fmt.Sprintf("sliding log; Redis stops at %.1f s: each of 2 VMs admits half, %d per 1 s", d.Seconds()/3, (limit+1)/2)},
		{name: "leases", lease: true, limit: fmt.Sprintf(`{"algorithm":"sliding_log","limit":%d,"window":"1s"}`, limit),
			note: fmt.Sprintf("sliding log, hot key leased in batches of up to %d", leaseBatch)},
		{name: "throttle", throttle: true, limit: fmt.Sprintf(`{"algorithm":"funnel","capacity":%d,"rate":%d,"period":"1s"}`, max(1, limit/5), limit),
			note: fmt.Sprintf("funnel of %d, %d per second; what it denies now waits up to %v (bars: when answered)", max(1, limit/5), limit, throttleDelay)},
	}
	rate := factor * float64(limit)
	run := time.Now().UnixNano()
	for _, a := range algos {
		config := fmt.Sprintf(`{"redis":{"cluster":"redis","key_prefix":"burst%d:"},"rules":[{"name":"burst",
			"key":[{"source":"header","name":"x-user"}],"limits":[%s]}]}`, run, a.limit)
		if a.lease {
			config = strings.Replace(config, `]}]}`, fmt.Sprintf(`],"lease":{"max_batch":%d}}]}`, leaseBatch), 1)
		}
		if a.throttle {
			config = strings.Replace(config, `]}]}`, fmt.Sprintf(`],"throttle":{"max_delay":%q}}]}`, throttleDelay), 1)
		}
		addr := redisAddr
		if a.outage {
			srv, err := redistest.StartServer()
			if err != nil {
				return err
			}
			defer srv.Stop()
			addr = srv.Addr
			time.AfterFunc(d/3, srv.Stop)
			config = strings.Replace(config, `"rules"`, `"failure_mode":"local","local_fallback":{"share":0.5},`+
				`"circuit_breaker":{"failures":1,"backoff":"10s"},"rules"`, 1)
		}
		h, err := wasmhost.Start(ctx, wasmhost.Config{Module: mod, PluginConfig: []byte(config), Upstream: upstream,
			RedisClusters: map[string]string{"redis": addr}, Workers: 2})
		if err != nil {
			return fmt.Errorf("%s: %w", a.name, err)
		}
		res, err := bench.Run(ctx, bench.Load{
			Addr:        strings.TrimPrefix(h.URL(), "http://"),
			Requests:    [][]byte{bench.Request(a.path(), [2]string{"x-user", "burst-" + a.name})},
			Connections: a.connections(),
			Duration:    d,
			Rate:        rate,
		})
		if a.outage {
			local, _ := h.Metric("ratelimit.failure_mode.local_allowed")
			a.note += fmt.Sprintf(" (%d admitted by the VMs alone)", local)
		}
		if a.lease {
			local, _ := h.Metric("ratelimit.lease.local")
			grants, _ := h.Metric("ratelimit.lease.grants")
			a.note += fmt.Sprintf(": %d admitted from %d batches with no Redis call", local, grants)
		}
		if a.throttle {
			held, _ := h.Metric("ratelimit.throttle.delayed")
			a.note += fmt.Sprintf(": %d held", held)
		}
		h.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", a.name, err)
		}
		if res.Errors > 0 {
			return fmt.Errorf("%s: %d failed requests, first: %v", a.name, res.Errors, res.FirstError)
		}
		a.buckets = make([][2]int, int(d/bucket))
		for _, s := range res.Samples {
			i := int(s.At / bucket)
			if a.throttle {
				i = int((s.At + s.Latency) / bucket)
			}
			a.total++
			switch s.Status {
			case 200:
				a.allowed++
			case 429:
			default:
				a.other++
			}
			if i < len(a.buckets) && s.Status == 200 {
				a.buckets[i][0]++
			} else if i < len(a.buckets) && s.Status == 429 {
				a.buckets[i][1]++
			}
		}
		if a.other > 0 {
			return fmt.Errorf("%s: %d answers neither 200 nor 429", a.name, a.other)
		}
		fmt.Printf("%-16s %4d sent, %4d allowed (%.1f/s for a limit of %d/s)\n", a.name, a.total, a.allowed,
			float64(a.allowed)/d.Seconds(), limit)
		fmt.Printf("  allowed per 100 ms: %v\n", column(a.buckets, 0))
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	title := fmt.Sprintf("The same burst, %.0f requests/s on one key for %.0f s (%.0f× the limit of %d/s), per algorithm",
		rate, d.Seconds(), factor, limit)
	if err := writeSVG(f, title, algos, rate, float64(limit), d); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", out)
	return nil
}

func column(b [][2]int, i int) []int {
	out := make([]int, len(b))
	for j := range b {
		out[j] = b[j][i]
	}
	return out
}

// leaseBatch is the leases' panel's max_batch.
const leaseBatch = 5

// throttleDelay is the throttle panel's max_delay.
const throttleDelay = 400 * time.Millisecond

// holdFor is how long the upstream holds a request of the concurrency
// panel, whose limit of slotsFor(limit) in flight then admits limit per
// second.
const holdFor = 100 * time.Millisecond

func slotsFor(limit int) int { return max(1, int(time.Duration(limit)*holdFor/time.Second)) }

// connections keeps the schedule: held requests tie up their connections.
func (a *algorithm) connections() int {
	switch {
	case a.hold:
		return 64
	case a.throttle:
		return 256
	}
	return 8
}

// path is the panel's request path: /hold asks the upstream to hold it.
func (a *algorithm) path() string {
	if a.hold {
		return "/hold"
	}
	return "/"
}

// startUpstream serves 200 "ok" on a loopback port, after holdFor on /hold.
func startUpstream() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			time.Sleep(holdFor)
		}
		io.WriteString(w, "ok\n")
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), func() { srv.Close() }, nil
}

// writeSVG draws one panel per algorithm: stacked bars of allowed and
// denied requests per bucket, and the limit's rate as a dashed line.
func writeSVG(w io.Writer, title string, algos []*algorithm, rate, limit float64, d time.Duration) error {
	const (
		width              = 960
		left, right        = 70, 20
		top                = 74
		panelH, panelGap   = 170, 70
		allowedC, deniedC  = "#2e7d32", "#ef9a9a"
		limitC, axisC, txt = "#1565c0", "#444", "#222"
	)
	plotW := float64(width - left - right)
	n := len(algos[0].buckets)
	perBucket := rate * bucket.Seconds()
	yMax := 5 * float64(int(perBucket*1.2/5)+1) // head room, a multiple of 5
	height := top + len(algos)*(panelH+panelGap) - panelGap + 60
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%d" y="24" font-size="15" font-weight="bold" fill="%s">%s</text>`+"\n", left, txt, html.EscapeString(title))
	// Legend.
	lx := float64(left)
	legend := func(color, label string, dashed bool) {
		if dashed {
			p(`<line x1="%.1f" y1="44" x2="%.1f" y2="44" stroke="%s" stroke-width="2" stroke-dasharray="6 4"/>`+"\n", lx, lx+24, color)
		} else {
			p(`<rect x="%.1f" y="38" width="24" height="12" fill="%s"/>`+"\n", lx, color)
		}
		p(`<text x="%.1f" y="48" fill="%s">%s</text>`+"\n", lx+30, txt, html.EscapeString(label))
		lx += 30 + 7.2*float64(len(label)) + 24
	}
	legend(allowedC, "allowed (200)", false)
	legend(deniedC, "denied (429)", false)
	legend(limitC, fmt.Sprintf("the limit's rate: %.0f per 100 ms", limit*bucket.Seconds()), true)

	barW := plotW / float64(n)
	for ai, a := range algos {
		y0 := float64(top + ai*(panelH+panelGap)) // panel top
		base := y0 + panelH
		scale := func(v float64) float64 { return base - v/yMax*panelH }
		p(`<text x="%d" y="%.1f" font-size="13" font-weight="bold" fill="%s">%s</text>`, left, y0-8, txt, a.name)
		p(`<text x="%d" y="%.1f" fill="%s"> — %s; %d of %d allowed</text>`+"\n", left+8*len(a.name)+10, y0-8, axisC,
			html.EscapeString(a.note), a.allowed, a.total)
		// Grid and y axis.
		for v := 0.0; v <= yMax; v += 5 {
			y := scale(v)
			p(`<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e0e0e0"/>`+"\n", left, y, float64(left)+plotW, y)
			p(`<text x="%d" y="%.1f" text-anchor="end" fill="%s">%.0f</text>`+"\n", left-6, y+4, axisC, v)
		}
		p(`<text transform="translate(%d %.1f) rotate(-90)" text-anchor="middle" fill="%s">requests per 100 ms</text>`+"\n",
			left-44, y0+panelH/2, axisC)
		// Bars.
		for i, c := range a.buckets {
			x := float64(left) + float64(i)*barW + 1
			hA := float64(c[0]) / yMax * panelH
			hD := float64(c[1]) / yMax * panelH
			if c[0] > 0 {
				p(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%.1f–%.1f s: %d allowed</title></rect>`+"\n",
					x, base-hA, barW-2, hA, allowedC, float64(i)*bucket.Seconds(), float64(i+1)*bucket.Seconds(), c[0])
			}
			if c[1] > 0 {
				p(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%.1f–%.1f s: %d denied</title></rect>`+"\n",
					x, base-hA-hD, barW-2, hD, deniedC, float64(i)*bucket.Seconds(), float64(i+1)*bucket.Seconds(), c[1])
			}
		}
		// The limit's rate.
		ly := scale(limit * bucket.Seconds())
		p(`<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="6 4"/>`+"\n",
			left, ly, float64(left)+plotW, ly, limitC)
		// X axis.
		p(`<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", left, base, float64(left)+plotW, base, axisC)
		for t := 0.0; t <= d.Seconds()+1e-9; t += 0.5 {
			x := float64(left) + t/d.Seconds()*plotW
			p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x, base, x, base+5, axisC)
			p(`<text x="%.1f" y="%.1f" text-anchor="middle" fill="%s">%.1f</text>`+"\n", x, base+18, axisC, t)
		}
		p(`<text x="%.1f" y="%.1f" text-anchor="middle" fill="%s">seconds since the burst began</text>`+"\n",
			float64(left)+plotW/2, base+34, axisC)
	}
	p("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
