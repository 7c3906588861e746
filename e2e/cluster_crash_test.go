package e2e

// A master crashed under load, as the failover tests over Webdis and behind
// the redis_proxy model both run it, and what both assert of it.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// crashRun is what a master's crash under load left.
type crashRun struct {
	got                      []answer
	crash, promoted, resumed time.Time
	// unavailableOn and unavailableOff count the 503s for users on the
	// dead master and elsewhere; lastSecond the admissions on the dead
	// master answered in the second before the crash; lost those missing
	// from the promoted replica.
	unavailableOn, unavailableOff, lastSecond, lost int
	first503, last503                               time.Time        // on the dead master
	errs                                            map[string]int64 // the nodes' error replies meanwhile
}

// crashUnderLoad sends requests for on (users whose keys live on m) and off
// from 8 senders to tgs in turn, kills m, waits for its replica r to be
// promoted, for a decision there, then for 100 more answers. It asserts
// what holds at any speed:
//   - every answer is 200 or 503, and no 503 came before the crash;
//   - at least one request on m's slots got the failure mode (503);
//   - a 503 on a live master's slot only for a -CLUSTERDOWN the nodes
//     answered (their cluster bus starved past cluster-node-timeout on a
//     busy machine: the filter retries it until redis.timeout); any other
//     is the filter's fault: one breaker for every node, or a stale map;
//   - the admissions lost (replication is asynchronous) are at most those
//     of the second before the crash;
//   - every request was answered (the load's stop).
func crashUnderLoad(t *testing.T, c *redistest.Cluster, prefix string, m, r *redistest.Server, on, off []string, tgs ...*wasmTarget) *crashRun {
	t.Helper()
	isOn := map[string]bool{}
	for _, u := range on {
		isOn[u] = true
	}
	errs0 := errorStats(t, c)
	l := newLoad(t, 8, tgs...)
	stop := l.start(t, append(append([]string(nil), on...), off...), 8)
	waitFor(t, "the load to be going", func() bool { return len(l.answers()) >= 300 })
	run := &crashRun{crash: time.Now()}
	if err := c.Crash(m); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.WaitPromoted(ctx, r); err != nil {
		t.Fatal(err)
	}
	run.promoted = time.Now()
	waitFor(t, "decisions on the promoted replica", func() bool {
		for _, a := range l.answers() {
			if isOn[a.user] && a.status == 200 && a.sent.After(run.promoted) {
				run.resumed = a.done
				return true
			}
		}
		return false
	})
	n := len(l.answers())
	waitFor(t, "more answers", func() bool { return len(l.answers()) >= n+100 })
	stop()

	run.got = l.answers()
	for _, a := range run.got {
		switch {
		case a.status != 200 && a.status != 503:
			t.Errorf("%s: status %d; want 200 or 503", a.user, a.status)
		case a.status == 503 && a.done.Before(run.crash):
			t.Errorf("%s: 503 %v before the crash", a.user, run.crash.Sub(a.done))
		case a.status == 503 && !isOn[a.user]:
			run.unavailableOff++
		case a.status == 503:
			if run.unavailableOn++; run.first503.IsZero() {
				run.first503 = a.done
			}
			run.last503 = a.done
		case isOn[a.user] && a.sent.Before(run.crash) && a.done.After(run.crash.Add(-time.Second)):
			run.lastSecond++
		}
	}
	run.errs = errorStats(t, c)
	for k, v := range errs0 {
		run.errs[k] -= v
	}
	if down := run.errs["CLUSTERDOWN"]; int64(run.unavailableOff) > down {
		t.Errorf("%d answers 503 on live masters' slots, with %d -CLUSTERDOWN from the nodes; want none but those", run.unavailableOff, down)
	} else if run.unavailableOff > 0 {
		t.Logf("%d answers 503 on live masters' slots: the nodes answered -CLUSTERDOWN %d times", run.unavailableOff, down)
	}
	if run.unavailableOn == 0 {
		t.Errorf("no request on the dead master's slots got the failure mode (503) during the election")
	}
	admitted := countBy(run.got, 200)
	for _, u := range on {
		run.lost += max(0, admitted[u]-ownerZcard(t, c, stateKey(prefix, u)))
	}
	if run.lost > run.lastSecond {
		t.Errorf("crash: %d admissions lost; want at most the %d of the second before the crash", run.lost, run.lastSecond)
	}
	return run
}

// String is the run's figures, for the log.
func (r *crashRun) String() string {
	window := "no 503"
	if !r.first503.IsZero() {
		window = fmt.Sprintf("from %v to %v after the crash", r.first503.Sub(r.crash).Round(time.Millisecond),
			r.last503.Sub(r.crash).Round(time.Millisecond))
	}
	return fmt.Sprintf("promoted after %v, decisions again after %v; %d answers 503 on the dead master's slots (%s), %d elsewhere; "+
		"%d admissions lost of %d in the second before the crash; statuses %v",
		r.promoted.Sub(r.crash).Round(time.Millisecond), r.resumed.Sub(r.crash).Round(time.Millisecond), r.unavailableOn, window,
		r.unavailableOff, r.lost, r.lastSecond, statuses(r.got))
}
