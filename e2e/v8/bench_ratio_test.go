package v8

import (
	"fmt"
	"maps"
	"slices"
)

// benchSlice is a module's turn in BenchmarkV8: some 10 ms of an admitted
// request's work, short beside the machine's changes of load.
const benchSlice = 500

// cpuRatio is a build's CPU per request against another's in the same
// run: the median of the rounds' ratios, whose two figures bench.mjs
// measured in interleaved slices, and their range. Taking the ratio
// round by round leaves out what moves both builds alike (the machine's
// load from minute to minute); a ratio of the two medians would not.
type cpuRatio struct {
	median, lo, hi float64
	rounds         int
}

// ratioOf is a's CPU ÷ b's, round by round over the rounds both have;
// without rounds on either side, the ratio of the two medians. ok is
// false when b has no figure.
func ratioOf(a, b *scenarioResult) (r cpuRatio, ok bool) {
	if a == nil || b == nil || b.CPUUs <= 0 {
		return cpuRatio{}, false
	}
	n := min(len(a.CPUUsRounds), len(b.CPUUsRounds))
	var xs []float64
	for i := range n {
		if b.CPUUsRounds[i] > 0 {
			xs = append(xs, a.CPUUsRounds[i]/b.CPUUsRounds[i])
		}
	}
	if len(xs) == 0 {
		x := a.CPUUs / b.CPUUs
		return cpuRatio{x, x, x, 1}, true
	}
	slices.Sort(xs)
	return cpuRatio{median(xs), xs[0], xs[len(xs)-1], len(xs)}, true
}

// median is the middle of sorted xs (the mean of the two middle ones).
func median(xs []float64) float64 {
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// String is the ratio in bold, with its range over the rounds.
func (r cpuRatio) String() string {
	if r.rounds < 2 {
		return fmt.Sprintf("**%.2f×**", r.median)
	}
	return fmt.Sprintf("**%.2f×** (%.2f–%.2f over %d rounds)", r.median, r.lo, r.hi, r.rounds)
}

// peerGoal judges ours's CPU in scenario sc against the peer's in
// peerSc: met at ratio ≤ bound; not measured without the peer, or when
// the peer did not answer every request of peerSc with status want (its
// admitted requests must be admitted, its denied ones denied).
func peerGoal(what string, ours, peer *benchResult, sc, peerSc, want string, bound float64) goal {
	var o, p *scenarioResult
	if ours != nil {
		o = ours.Scenarios[sc]
	}
	if o == nil {
		return goal{what, "no figure of ours", "not measured"}
	}
	if peer == nil || peer.Scenarios[peerSc] == nil {
		return goal{what, fmt.Sprintf("%.1f µs; the peer is not in this run (V8_BENCH_PEER unset: see `make peer`)", o.CPUUs), "not measured"}
	}
	p = peer.Scenarios[peerSc]
	if len(p.Statuses) != 1 || p.Statuses[want] == 0 {
		return goal{what, fmt.Sprintf("%.1f µs; the peer's %s requests were answered %v, not all %s", o.CPUUs, peerSc, sortedStatuses(p.Statuses), want), "not measured"}
	}
	r, _ := ratioOf(o, p)
	met := map[bool]string{true: "yes", false: "no"}[r.median <= bound]
	return goal{what, fmt.Sprintf("%s (%.1f against %.1f µs)", r, o.CPUUs, p.CPUUs), met}
}

func sortedStatuses(m map[string]int) string {
	s := ""
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s += fmt.Sprintf(" %s×%d", k, m[k])
	}
	if s == "" {
		return "none"
	}
	return s[1:]
}
