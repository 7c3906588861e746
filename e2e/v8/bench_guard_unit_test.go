package v8

import (
	"strings"
	"testing"
)

// guardResult is a BenchmarkV8 result with the guard's figures: the
// Higress build at cpu µs per admitted request beside a baseline of 10 µs,
// firstMs of start-up beside the no-op's 100 ms, memory in MiB and size
// in bytes.
func guardResult(cpu, firstMs, memStart, memAfter float64, size int64) benchResults {
	mod := func(cpu, firstMs, memStart, memAfter float64, size int64) *benchResult {
		m := &benchResult{Size: size, Scenarios: map[string]*scenarioResult{
			"admitted": {CPUUs: cpu, HostCalls: 8, Memory: int(memAfter * mib)},
			"cached":   {CPUUs: cpu / 2, HostCalls: 4, Memory: int(memStart * mib)},
		}}
		m.Startup.CompileMs = firstMs / 2
		m.Startup.VMs = make([]struct {
			InstantiateMs float64 `json:"instantiate_ms"`
			StartMs       float64 `json:"start_ms"`
			Initialize    float64 `json:"initialize"`
			VMStart       float64 `json:"vm_start"`
			Configure     float64 `json:"configure"`
		}, 2)
		m.Startup.VMs[0].StartMs = firstMs / 2
		m.Startup.VMs[1].StartMs = 5
		m.Memory.AfterStart, m.Memory.AfterRequests, m.Memory.Requests = int(memStart*mib), int(memAfter*mib), 1000
		return m
	}
	return benchResults{Modules: map[string]*benchResult{
		"no-op":        mod(1, 100, 2, 2, 1e6),
		"higress":      mod(cpu, firstMs, memStart, memAfter, size),
		"stock":        mod(cpu*1.3, firstMs, memStart, memAfter, size),
		"higress@base": mod(10, 170, 4.5, 6.3, 5.41e6),
	}}
}

// The guard judges each goal from the figures: met at the bound, not met
// beyond it, and the peer's goals not measured (no peer in the harness).
func TestGuardGoals(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    benchResults
		want map[string]string // a goal's prefix -> met
	}{
		{"all met, at the bounds", guardResult(8, 130, 3.5, 4.5, 4_500_000), map[string]string{
			"CPU per admitted request ≤ 0.8×": "yes", "linear memory per VM after init": "yes",
			"linear memory per VM after N": "yes", "first VM's start-up": "yes", "module size": "yes",
			"CPU per admitted request ≤ 0.15×": "not measured", "CPU per denied request": "not measured",
		}},
		{"none met", guardResult(8.1, 131, 3.6, 4.6, 4_500_001), map[string]string{
			"CPU per admitted request ≤ 0.8×": "no", "linear memory per VM after init": "no",
			"linear memory per VM after N": "no", "first VM's start-up": "no", "module size": "no",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			goals := guardGoals(tc.r)
			for prefix, want := range tc.want {
				found := false
				for _, g := range goals {
					if strings.HasPrefix(g.what, prefix) {
						found = true
						if g.met != want {
							t.Errorf("%s: met %q (%s), want %q", g.what, g.met, g.figure, want)
						}
					}
				}
				if !found {
					t.Errorf("no goal %q in %+v", prefix, goals)
				}
			}
		})
	}
}

// The guard's tables carry each build's ratio to the no-op and to the
// baseline, the host calls and memory beside the baseline's, the start-up
// of the first and second VM, and the size.
func TestPrintGuard(t *testing.T) {
	var b strings.Builder
	r := guardResult(8, 130, 3.5, 4.5, 4_500_000)
	r.Modules["stock"].Startup.FirstVMs = []float64{140, 130, 120}
	printGuard(&b, r, "/tmp/base")
	out := b.String()
	t.Log(out)
	for _, want := range []string{
		"| higress | admitted | 8.0 | 8.0× | **0.80×** | 8.00 (8.00) | 4.5 (6.3) |",
		"| stock | cached | 5.2 | 10.4× | **1.04×** | 4.00 (4.00) | 3.5 (4.5) |",
		"| higress | 130 ms | 1.30× | 5.0 ms |",
		"| stock | 130 ms (120–140, median of 3) | 1.30× | 5.0 ms |",
		"| higress@base | 170 ms | 1.70× | 5.0 ms | 0 ms | 0 ms | 4.5 MiB | 6.3 MiB (N = 1000) | 5.41 MB |",
		"| CPU per admitted request ≤ 0.8× 13bdab3's | **0.80×** (8.0 against 10.0 µs) | yes |",
		"| module size ≤ 4.5 MB | **4.50 MB** (stock build 4.50 MB) | yes |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the guard's tables lack %q", want)
		}
	}
}
