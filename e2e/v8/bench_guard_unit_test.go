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
// beyond it, and the peer's goals not measured without the peer.
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
	r := withPeer(guardResult(8, 130, 3.5, 4.5, 4_500_000), 80, 40, "200", "429")
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
		"| peer | admitted | 80.0 | 80.0× | – | 0.00 | 0.0 |",
		"| CPU per admitted request ≤ 0.15× the peer's | **0.10×** (8.0 against 80.0 µs) | yes |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the guard's tables lack %q", want)
		}
	}
}

// A ratio between two builds is the median of the rounds' ratios, with
// their range: a round whose load slowed one build's turn moves its own
// ratio only.
func TestRatioOf(t *testing.T) {
	sc := func(cpu float64, rounds ...float64) *scenarioResult {
		return &scenarioResult{CPUUs: cpu, CPUUsRounds: rounds}
	}
	for _, tc := range []struct {
		name string
		a, b *scenarioResult
		want string
		ok   bool
	}{
		{"round by round", sc(20, 10, 20, 30, 40), sc(10, 10, 10, 10, 10), "**2.50×** (1.00–4.00 over 4 rounds)", true},
		// The medians alone would give 30 ÷ 20 = 1.50×.
		{"a slow round on each side", sc(30, 10, 30, 31), sc(20, 10, 40, 20), "**1.00×** (0.75–1.55 over 3 rounds)", true},
		{"no rounds: the medians", sc(8), sc(10), "**0.80×**", true},
		{"no baseline", sc(8), nil, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := ratioOf(tc.a, tc.b)
			if ok != tc.ok || ok && r.String() != tc.want {
				t.Errorf("ratioOf = %s, %v; want %s, %v", r, ok, tc.want, tc.ok)
			}
		})
	}
}

// withPeer adds the peer to r: admitted at admitted µs, denied at denied
// µs, 1000 requests each answered with the given statuses.
func withPeer(r benchResults, admitted, denied float64, admittedStatus, deniedStatus string) benchResults {
	r.Modules["peer"] = &benchResult{Scenarios: map[string]*scenarioResult{
		"admitted": {CPUUs: admitted, Statuses: map[string]int{admittedStatus: 1000}},
		"denied":   {CPUUs: denied, Statuses: map[string]int{deniedStatus: 1000}},
	}}
	return r
}

// With the peer in the run, its goals compare our admitted request with
// its admitted one, and our deny-cache denial with its denial; a peer
// that did not answer its scenario as it must is not a measure.
func TestGuardPeerGoals(t *testing.T) {
	admitted, denied := "CPU per admitted request ≤ 0.15× the peer's", "CPU per denied request (deny cache) ≤ 0.12× the peer's"
	for _, tc := range []struct {
		name     string
		r        benchResults
		want     map[string]string // goal -> met
		contains map[string]string // goal -> in its figure
	}{
		{"no peer", guardResult(8, 130, 3.5, 4.5, 4_500_000),
			map[string]string{admitted: "not measured", denied: "not measured"},
			map[string]string{admitted: "8.0 µs; the peer is not in this run (V8_BENCH_PEER unset"}},
		// Ours: 8 µs admitted, 4 µs from the deny cache.
		{"both met", withPeer(guardResult(8, 130, 3.5, 4.5, 4_500_000), 80, 40, "200", "429"),
			map[string]string{admitted: "yes", denied: "yes"},
			map[string]string{admitted: "**0.10×** (8.0 against 80.0 µs)", denied: "**0.10×** (4.0 against 40.0 µs)"}},
		{"neither met", withPeer(guardResult(8, 130, 3.5, 4.5, 4_500_000), 40, 20, "200", "429"),
			map[string]string{admitted: "no", denied: "no"},
			map[string]string{admitted: "**0.20×**", denied: "**0.20×**"}},
		{"the peer admitted what it should deny", withPeer(guardResult(8, 130, 3.5, 4.5, 4_500_000), 80, 40, "200", "200"),
			map[string]string{admitted: "yes", denied: "not measured"},
			map[string]string{denied: "the peer's denied requests were answered 200×1000, not all 429"}},
		{"the peer denied what it should admit", withPeer(guardResult(8, 130, 3.5, 4.5, 4_500_000), 80, 40, "429", "429"),
			map[string]string{admitted: "not measured", denied: "yes"},
			map[string]string{admitted: "answered 429×1000, not all 200"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			goals := map[string]goal{}
			for _, g := range guardGoals(tc.r) {
				goals[g.what] = g
			}
			for what, met := range tc.want {
				if g, ok := goals[what]; !ok || g.met != met {
					t.Errorf("%s: %+v, want met %q", what, g, met)
				}
			}
			for what, s := range tc.contains {
				if !strings.Contains(goals[what].figure, s) {
					t.Errorf("%s: figure %q lacks %q", what, goals[what].figure, s)
				}
			}
		})
	}
}

// The goals against 13bdab3 and the peer take the rounds' median ratio:
// one slow round of ours does not decide them.
func TestGuardGoalsRoundByRound(t *testing.T) {
	r := withPeer(guardResult(8, 130, 3.5, 4.5, 4_500_000), 80, 40, "200", "429")
	r.Modules["higress"].Scenarios["admitted"].CPUUsRounds = []float64{8, 16, 8}
	r.Modules["higress@base"].Scenarios["admitted"].CPUUsRounds = []float64{10, 10, 10}
	r.Modules["peer"].Scenarios["admitted"].CPUUsRounds = []float64{80, 80, 80}
	for _, g := range guardGoals(r) {
		switch g.what {
		case "CPU per admitted request ≤ 0.8× 13bdab3's":
			if g.met != "yes" || !strings.HasPrefix(g.figure, "**0.80×** (0.80–1.60 over 3 rounds)") {
				t.Errorf("%+v: want met at 0.80× (0.80–1.60 over 3 rounds)", g)
			}
		case "CPU per admitted request ≤ 0.15× the peer's":
			if g.met != "yes" || !strings.HasPrefix(g.figure, "**0.10×** (0.10–0.20 over 3 rounds)") {
				t.Errorf("%+v: want met at 0.10× (0.10–0.20 over 3 rounds)", g)
			}
		}
	}
}

// Without $V8_BENCH_PEER the bench has no peer; with it, the peer runs as
// on Higress (its Redis callout through its config's cluster, mapped to
// our Redis, and Higress's WASI), admitted and denied only.
func TestPeerModules(t *testing.T) {
	mods := []benchModule{{Name: "no-op"}, {Name: "higress", RedisClusters: map[string]string{"redis": "127.0.0.1:6379"}}}
	t.Setenv("V8_BENCH_PEER", "")
	if got := peerModules(mods); len(got) != 2 {
		t.Fatalf("V8_BENCH_PEER unset: %d modules, want 2", len(got))
	}
	t.Setenv("V8_BENCH_PEER", "/tmp/peer.wasm")
	got := peerModules(mods)
	if len(got) != 3 {
		t.Fatalf("V8_BENCH_PEER set: %d modules, want 3", len(got))
	}
	p := got[2]
	if p.Name != "peer" || p.Wasm != "/tmp/peer.wasm" || !p.RedisABI || !p.HigressWASI ||
		p.RedisClusters["outbound|6379||redis.static"] != "127.0.0.1:6379" || len(p.Configs) != 2 ||
		!strings.Contains(p.Configs["admitted"], `"query_per_hour":100000000`) || !strings.Contains(p.Configs["denied"], `"query_per_hour":1}`) {
		t.Errorf("the peer: %+v", p)
	}
}
