package main

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The hot key phase: every request on /hot/ meets the "hot" rule of
// config.json, one key for all (1000 per 10 s) with "lease": {}. The VMs
// find the key hot and take batches of its units, so most requests are
// admitted with no Redis call; the host's metrics at shutdown say how
// many (printLeaseMetrics).

const (
	hotRule     = "hot"
	hotRequests = 3000
	hotClients  = 8
	hotSettle   = 2500 * time.Millisecond
)

type hotSummary struct{ allowed, denied int64 }

func hotPhase(url string) (hotSummary, error) {
	fmt.Printf("\nHot key: %d requests from %d clients on rule %q, one key limited to 1000 per 10 s, leased\n", hotRequests, hotClients, hotRule)
	var sum hotSummary
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, hotClients)
	for range hotClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= hotRequests {
				resp, err := http.Get(url + "/hot/item")
				if err != nil {
					errs <- err
					return
				}
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					atomic.AddInt64(&sum.allowed, 1)
				case http.StatusTooManyRequests:
					atomic.AddInt64(&sum.denied, 1)
				default:
					errs <- fmt.Errorf("hot key: status %d", resp.StatusCode)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return sum, err
	}
	fmt.Printf("  allowed %d, denied %d; waiting %v for the leases to end (max_hold 1 s, then a tick)\n", sum.allowed, sum.denied, hotSettle)
	time.Sleep(hotSettle)
	return sum, nil
}

// hostMetrics reads the metrics re matches (name, value) from the host's
// log, by name.
func hostMetrics(hostLog string, re *regexp.Regexp) map[string]int64 {
	m := map[string]int64{}
	for _, g := range re.FindAllStringSubmatch(hostLog, -1) {
		m[g[1]], _ = strconv.ParseInt(g[2], 10, 64)
	}
	return m
}

var leaseMetric = regexp.MustCompile(`ratelimit\.lease\.([a-z_]+):(\d+)`)

// printLeaseMetrics prints the lease metrics from the host's log, ended
// by its metrics at shutdown.
func printLeaseMetrics(hostLog string, sum hotSummary) {
	m := hostMetrics(hostLog, leaseMetric)
	if len(m) == 0 {
		fmt.Println("\nlease metrics: the host reported none at shutdown")
		return
	}
	fmt.Println("\nlease metrics, as the host reported them at shutdown (ratelimit.lease.*):")
	for _, name := range []string{"hot_keys", "grants", "units", "local", "held", "returned"} {
		fmt.Printf("  %-9s %d\n", name, m[name])
	}
	fmt.Printf("  %d of the %d allowed hot-key requests were admitted from a batch, with no Redis call;\n", m["local"], sum.allowed)
	if m["returned"] > 0 {
		fmt.Printf("  %d units held in a VM went back unspent once its lease ended: the other VM's requests found Redis out of them\n", m["returned"])
	} else {
		fmt.Println("  every unit the batches took was spent")
	}
}
