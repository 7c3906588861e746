package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// The admin listener, a small part of Envoy's: /stats, /stats/prometheus
// and /ready. The guest's metrics are read after it has handed over what
// it buffers (Host.Stats), so they count every request served.
//
//   - /stats: "name: value" per line, sorted; the guest's metrics under
//     "wasmcustom.", as Envoy keeps them; histograms as Envoy prints them,
//     quantiles of the values recorded (the interval part is nan).
//     ?filter=REGEX keeps the names it matches (RE2).
//   - /stats/prometheus: the exposition format; "wasmcustom." stripped and
//     no "envoy_" prefix, as Envoy does for custom metrics; other bytes
//     than [A-Za-z0-9_] become "_". Histograms with Envoy's default
//     buckets.
//   - /ready: 200 "LIVE" once every VM is configured; 503
//     "PRE_INITIALIZING" before, "DRAINING" once shutting down.

const customPrefix = "wasmcustom."

// Server states /ready reports.
const (
	statePreInitializing int32 = iota
	stateLive
	stateDraining
)

var stateNames = [...]string{"PRE_INITIALIZING", "LIVE", "DRAINING"}

type adminServer struct {
	ln    net.Listener
	srv   *http.Server
	host  atomic.Pointer[wasmhost.Host]
	state atomic.Int32
}

// startAdmin serves the admin endpoints on addr; /ready says
// PRE_INITIALIZING until setHost.
func startAdmin(addr string, errLog *log.Logger) (*adminServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin: %w (-admin ADDR to move it, -admin '' for none)", err)
	}
	a := &adminServer{ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ready", a.ready)
	mux.HandleFunc("GET /stats", a.stats)
	mux.HandleFunc("GET /stats/prometheus", a.prometheus)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "wasmhost admin: /stats, /stats/prometheus, /ready\n")
	})
	a.srv = &http.Server{Handler: mux, ErrorLog: errLog}
	go func() {
		if err := a.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errLog.Printf("admin: %v", err)
		}
	}()
	return a, nil
}

func (a *adminServer) URL() string { return "http://" + a.ln.Addr().String() }

func (a *adminServer) setHost(h *wasmhost.Host) {
	a.host.Store(h)
	a.state.Store(stateLive)
}

func (a *adminServer) draining() { a.state.Store(stateDraining) }

func (a *adminServer) close() { a.srv.Close() }

func (a *adminServer) ready(w http.ResponseWriter, _ *http.Request) {
	st := a.state.Load()
	w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
	if st != stateLive {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	io.WriteString(w, stateNames[st]+"\n")
}

// metrics are the guest's metrics, or none before the host started.
func (a *adminServer) metrics() []wasmhost.Stat {
	h := a.host.Load()
	if h == nil || a.state.Load() != stateLive {
		return nil
	}
	return h.Stats()
}

func (a *adminServer) stats(w http.ResponseWriter, r *http.Request) {
	var keep *regexp.Regexp
	if f := r.URL.Query().Get("filter"); f != "" {
		var err error
		if keep, err = regexp.Compile(f); err != nil {
			http.Error(w, "filter: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
	var b strings.Builder
	var hists []wasmhost.Stat
	for _, s := range a.metrics() {
		if keep != nil && !keep.MatchString(customPrefix+s.Name) {
			continue
		}
		if s.Kind == wasmhost.StatHistogram {
			hists = append(hists, s)
			continue
		}
		fmt.Fprintf(&b, "%s%s: %d\n", customPrefix, s.Name, s.Value)
	}
	for _, s := range hists { // Envoy lists histograms after the rest
		fmt.Fprintf(&b, "%s%s: %s\n", customPrefix, s.Name, quantiles(s.Samples))
	}
	io.WriteString(w, b.String())
}

// quantiles renders a histogram as Envoy's /stats does, "P0(nan,v) ...";
// each value is the recorded value at that rank.
func quantiles(samples []uint64) string {
	if len(samples) == 0 {
		return "No recorded values"
	}
	sorted := append([]uint64(nil), samples...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	qs := []struct {
		label string
		q     float64
	}{{"0", 0}, {"25", .25}, {"50", .5}, {"75", .75}, {"90", .9}, {"95", .95}, {"99", .99}, {"99.5", .995}, {"99.9", .999}, {"100", 1}}
	parts := make([]string, len(qs))
	for i, q := range qs {
		v := sorted[int(q.q*float64(len(sorted)-1)+0.5)]
		parts[i] = fmt.Sprintf("P%s(nan,%d)", q.label, v)
	}
	return strings.Join(parts, " ")
}

// envoyBuckets are Envoy's default histogram bucket bounds.
var envoyBuckets = []float64{0.5, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000,
	30000, 60000, 300000, 600000, 1800000, 3600000}

func (a *adminServer) prometheus(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=UTF-8")
	var b strings.Builder
	for _, s := range a.metrics() {
		name := promName(s.Name)
		switch s.Kind {
		case wasmhost.StatCounter:
			fmt.Fprintf(&b, "# TYPE %s counter\n%s{} %d\n", name, name, s.Value)
		case wasmhost.StatGauge:
			fmt.Fprintf(&b, "# TYPE %s gauge\n%s{} %d\n", name, name, s.Value)
		case wasmhost.StatHistogram:
			fmt.Fprintf(&b, "# TYPE %s histogram\n", name)
			var sum float64
			for _, v := range s.Samples {
				sum += float64(v)
			}
			for _, le := range envoyBuckets {
				n := 0
				for _, v := range s.Samples {
					if float64(v) <= le {
						n++
					}
				}
				fmt.Fprintf(&b, "%s_bucket{le=\"%s\"} %d\n", name, strconv.FormatFloat(le, 'f', -1, 64), n)
			}
			fmt.Fprintf(&b, "%s_bucket{le=\"+Inf\"} %d\n", name, len(s.Samples))
			fmt.Fprintf(&b, "%s_sum{} %s\n%s_count{} %d\n", name, strconv.FormatFloat(sum, 'f', -1, 64), name, len(s.Samples))
		}
	}
	io.WriteString(w, b.String())
}

// promName is a custom metric's Prometheus name, as Envoy writes it: the
// custom namespace stripped, no envoy_ prefix, every byte outside
// [A-Za-z0-9_] an underscore, and a leading digit escaped with one.
func promName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) > 0 && '0' <= b[0] && b[0] <= '9' {
		return "_" + string(b)
	}
	return string(b)
}
