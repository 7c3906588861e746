package main

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// The throttle phase: requests on /calm/ meet the "calm" rule of
// config.json, one key, a funnel of 2 draining 5 a second, whose throttle
// holds a request up to 2 s instead of denying it. A burst sent at once
// comes out spaced by the funnel: the first 2 at once, then one every
// 200 ms; what would wait beyond 2 s is denied at once.

const (
	throttleRule     = "calm"
	throttleRequests = 20
)

func throttlePhase(url string) error {
	fmt.Printf("\nThrottle: %d requests at once on rule %q, a funnel of 2 draining 5 a second, held up to 2 s instead of denied\n",
		throttleRequests, throttleRule)
	type answer struct {
		status int
		after  time.Duration
	}
	answers := make([]answer, throttleRequests)
	errs := make([]error, throttleRequests)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range throttleRequests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(url + "/calm/report")
			if err != nil {
				errs[i] = err
				return
			}
			resp.Body.Close()
			answers[i] = answer{resp.StatusCode, time.Since(start)}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	var allowed, denied []string
	slices.SortFunc(answers, func(a, b answer) int { return int(a.after - b.after) })
	for _, a := range answers {
		at := fmt.Sprintf("%.2f", a.after.Seconds())
		switch a.status {
		case http.StatusOK:
			allowed = append(allowed, at)
		case http.StatusTooManyRequests:
			denied = append(denied, at)
		default:
			return fmt.Errorf("throttle: status %d", a.status)
		}
	}
	fmt.Printf("  %2d allowed, answered after (s): %s\n", len(allowed), strings.Join(allowed, " "))
	fmt.Printf("  %2d denied (429),  answered after (s): %s\n", len(denied), strings.Join(denied, " "))
	return nil
}
