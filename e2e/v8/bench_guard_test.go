package v8

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"testing"
)

// The guard: issue 31's figures from one BenchmarkV8 run, each build
// beside the no-op module and the baseline's Higress build
// ("higress@base", $V8_BENCH_BASELINE; make bench builds 13bdab3's).

// guardScenarios are the scenarios whose ratios the guard prints.
var guardScenarios = []string{"admitted", "denied", "cached", "llm", "llm_exact", "body_key"}

// headlineScenarios are the goals' scenarios: BenchmarkV8 runs them for
// more rounds (headlineRounds), so that their ratios are the steadiest.
var headlineScenarios = []string{"admitted", "denied", "cached"}

const headlineRounds = 15

// goal is one of issue 31's goals: what, the figure measured and whether
// it is met ("yes", "no", or "not measured").
type goal struct{ what, figure, met string }

const mib = 1 << 20

// firstVMMs is a module's first VM's start-up: compiling the module,
// instantiating and starting the VM (_initialize, vm start, configure).
func firstVMMs(m *benchResult) float64 {
	if m == nil || len(m.Startup.VMs) == 0 {
		return 0
	}
	v := m.Startup.VMs[0]
	return m.Startup.CompileMs + v.InstantiateMs + v.StartMs
}

// secondVMMs is the second VM's start-up, of the module already compiled.
func secondVMMs(m *benchResult) float64 {
	if m == nil || len(m.Startup.VMs) < 2 {
		return 0
	}
	v := m.Startup.VMs[1]
	return v.InstantiateMs + v.StartMs
}

// guardGoals judges the Higress build ("higress") against issue 31's
// goals: the CPU ratios round by round (ratioOf), against 13bdab3's build
// and against the peer (Higress's own plugin, $V8_BENCH_PEER), whose
// goals are not measured without it.
func guardGoals(r benchResults) []goal {
	ours, base, noop := r.Modules["higress"], r.Modules["higress@base"], r.Modules["no-op"]
	met := func(ok bool) string { return map[bool]string{true: "yes", false: "no"}[ok] }
	var g []goal
	g = append(g, peerGoal("CPU per admitted request ≤ 0.15× the peer's", ours, r.Modules["peer"], "admitted", "admitted", "200", 0.15))
	var o, b *scenarioResult
	if ours != nil && base != nil {
		o, b = ours.Scenarios["admitted"], base.Scenarios["admitted"]
	}
	if x, ok := ratioOf(o, b); ok {
		g = append(g, goal{"CPU per admitted request ≤ 0.8× 13bdab3's", fmt.Sprintf("%s (%.1f against %.1f µs)", x, o.CPUUs, b.CPUUs), met(x.median <= 0.8)})
	} else {
		g = append(g, goal{"CPU per admitted request ≤ 0.8× 13bdab3's", "no baseline in this run", "not measured"})
	}
	g = append(g, peerGoal("CPU per denied request (deny cache) ≤ 0.12× the peer's", ours, r.Modules["peer"], "cached", "denied", "429", 0.12))
	if ours != nil {
		start, after := float64(ours.Memory.AfterStart)/mib, float64(ours.Memory.AfterRequests)/mib
		g = append(g,
			goal{"linear memory per VM after init ≤ 3.5 MiB", fmt.Sprintf("**%.1f MiB**", start), met(start <= 3.5)},
			goal{fmt.Sprintf("linear memory per VM after N requests ≤ 4.5 MiB (N = %d)", ours.Memory.Requests), fmt.Sprintf("**%.1f MiB**", after), met(after <= 4.5)})
	}
	if n := firstVMMs(noop); n > 0 {
		x := firstVMMs(ours) / n
		g = append(g, goal{"first VM's start-up ≤ 1.3× a no-op Go filter's", fmt.Sprintf("**%.2f×** (%.0f against %.0f ms)", x, firstVMMs(ours), n), met(x <= 1.3)})
	}
	size, stock := float64(ours.sizeOr0())/1e6, float64(r.Modules["stock"].sizeOr0())/1e6
	g = append(g, goal{"module size ≤ 4.5 MB", fmt.Sprintf("**%.2f MB** (stock build %.2f MB)", size, stock), met(size <= 4.5 && stock <= 4.5)})
	return g
}

func (m *benchResult) sizeOr0() int64 {
	if m == nil {
		return 0
	}
	return m.Size
}

// printGuard writes the guard's tables: per scenario, each build's CPU,
// host calls and its VM's memory beside the no-op's and the baseline's;
// per module, start-up and size; then the goals, met or not.
func printGuard(w io.Writer, r benchResults, baseline string) {
	noop := r.Modules["no-op"]
	fmt.Fprintf(w, "\nThe guard (issue 31): each build ÷ the no-op and ÷ the baseline's Higress build (higress@base: %s) in the same run;"+
		" the ratio to higress@base and to the peer is the median of the rounds' ratios, with their range.\n\n", orDash(baseline))
	fmt.Fprintln(w, "| module | scenario | CPU µs/req | ÷ no-op | ÷ higress@base | host calls (@base) | VM memory MiB (@base) |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|")
	for _, sc := range guardScenarios {
		var b *scenarioResult
		if m := r.Modules["higress@base"]; m != nil {
			b = m.Scenarios[sc]
		}
		for _, n := range []string{"higress", "stock", "peer"} {
			m := r.Modules[n]
			if m == nil || m.Scenarios[sc] == nil {
				continue
			}
			s := m.Scenarios[sc]
			xNoop, xBase, calls, mem := "–", "–", fmt.Sprintf("%.2f", s.HostCalls), fmt.Sprintf("%.1f", float64(s.Memory)/mib)
			if noop != nil && noop.Scenarios[sc] != nil && noop.Scenarios[sc].CPUUs > 0 {
				xNoop = fmt.Sprintf("%.1f×", s.CPUUs/noop.Scenarios[sc].CPUUs)
			}
			if x, ok := ratioOf(s, b); ok && n != "peer" {
				xBase = x.String()
				calls += fmt.Sprintf(" (%.2f)", b.HostCalls)
				mem += fmt.Sprintf(" (%.1f)", float64(b.Memory)/mib)
			}
			fmt.Fprintf(w, "| %s | %s | %.1f | %s | %s | %s | %s |\n", n, sc, s.CPUUs, xNoop, xBase, calls, mem)
		}
	}
	fmt.Fprintln(w, "\n| module | first VM's start-up | ÷ no-op | second VM's | _initialize | configure | memory after init | after N requests | module size |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, n := range []string{"no-op", "higress", "stock", "higress@base", "peer"} {
		m := r.Modules[n]
		if m == nil || len(m.Startup.VMs) == 0 {
			continue
		}
		x := "–"
		if firstVMMs(noop) > 0 {
			x = fmt.Sprintf("%.2f×", firstVMMs(m)/firstVMMs(noop))
		}
		v := m.Startup.VMs[0]
		first := fmt.Sprintf("%.0f ms", firstVMMs(m))
		if runs := m.Startup.FirstVMs; len(runs) > 1 {
			first += fmt.Sprintf(" (%.0f–%.0f, median of %d)", slices.Min(runs), slices.Max(runs), len(runs))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.1f ms | %.0f ms | %.0f ms | %.1f MiB | %.1f MiB (N = %d) | %.2f MB |\n", n, first, x,
			secondVMMs(m), v.Initialize, v.Configure, float64(m.Memory.AfterStart)/mib, float64(m.Memory.AfterRequests)/mib, m.Memory.Requests, float64(m.Size)/1e6)
	}
	fmt.Fprintln(w, "\n| goal (Higress build) | measured | met? |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, g := range guardGoals(r) {
		fmt.Fprintf(w, "| %s | %s | %s |\n", g.what, g.figure, g.met)
	}
}

func orDash(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// memoryRequests is N, the requests the admitted VM serves before its
// memory is read: $V8_BENCH_N, or 1,000,000 (the published run's).
func memoryRequests(t testing.TB) int {
	s := os.Getenv("V8_BENCH_N")
	if s == "" {
		return 1_000_000
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("V8_BENCH_N=%q: want a count of requests", s)
	}
	return n
}
