package v8

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
)

// scanCosts returns, per chunk size, a module's CPU µs per MiB of stream
// with response_cost (scan) and without (plain).
func scanCosts(m *benchResult) map[int][2]float64 {
	out := map[int][2]float64{}
	for _, s := range m.Scan {
		v := out[s.Chunk]
		v[map[string]int{"scan": 0, "plain": 1}[s.Kind]] = s.CPUUsPerMiB
		out[s.Chunk] = v
	}
	return out
}

// printBench writes the V8 table as BENCHMARKS.md shows it.
func printBench(w io.Writer, r benchResults) {
	mib := func(n int) string { return fmt.Sprintf("%.1f", float64(n)/(1<<20)) }
	noop := r.Modules["no-op"]
	names := []string{"no-op", "higress", "stock"}
	var others []string
	for n := range r.Modules {
		if !slices.Contains(names, n) {
			others = append(others, n)
		}
	}
	sort.Strings(others)
	names = append(names, others...)
	fmt.Fprintf(w, "\nV8 %s (Node %s), flags %s; CPU is the median of the rounds.\n", r.V8, r.Node, strings.Join(r.Flags, " "))
	for _, sc := range benchScenarios {
		if s, ok := r.Streams[sc.name]; ok {
			fmt.Fprintf(w, "%s: a %d-byte text/event-stream response in %d chunks of %d bytes.\n", sc.name, s.Bytes, s.Chunks, s.Chunk)
		}
	}
	fmt.Fprintln(w, "\n| module | scenario | CPU µs/request | ÷ no-op | guest µs | host calls / guest calls | Redis calls |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---|---:|")
	for _, sc := range benchScenarios {
		for _, n := range names {
			s := r.Modules[n].Scenarios[sc.name]
			if s == nil || n != "no-op" && s.Statuses["200"]+s.Statuses["429"] == 0 {
				continue
			}
			guest := "–"
			if s.GuestUs > 0 {
				guest = fmt.Sprintf("%.1f", s.GuestUs)
			}
			fmt.Fprintf(w, "| %s | %s | %.1f | %.1f× | %s | %.0f / %.0f | %.1f |\n", n, sc.what, s.CPUUs,
				s.CPUUs/noop.Scenarios[sc.name].CPUUs, guest, s.HostCalls, s.GuestCalls, s.RedisCalls)
		}
	}
	cpu := func(n, sc string) float64 { return r.Modules[n].Scenarios[sc].CPUUs }
	fmt.Fprintf(w, "\nstock ÷ higress, admitted: %.2f×\n", cpu("stock", "admitted")/cpu("higress", "admitted"))
	for _, n := range []string{"higress", "stock"} {
		if r.Modules[n].Scenarios["llm"] == nil {
			continue
		}
		llm, exact, ad := r.Modules[n].Scenarios["llm"], r.Modules[n].Scenarios["llm_exact"], r.Modules[n].Scenarios["admitted"]
		fmt.Fprintf(w, "%s: LLM stream with a settle ÷ admitted: %.2f× CPU, %.1f Redis calls per request against %.1f; the settle alone (llm - llm_exact): %.1f µs, %.0f host calls, %.0f guest calls\n",
			n, llm.CPUUs/ad.CPUUs, llm.RedisCalls, ad.RedisCalls, llm.CPUUs-exact.CPUUs, llm.HostCalls-exact.HostCalls, llm.GuestCalls-exact.GuestCalls)
	}
	for _, n := range []string{"higress", "stock"} {
		sc := r.Modules[n].Scenarios
		if llm, priced := sc["llm"], sc["llm_priced"]; llm != nil && priced != nil {
			fmt.Fprintf(w, "%s: the price table (llm_priced - llm): %+.1f µs CPU per request (%.2f× llm), %+.0f host calls, %+.0f guest calls\n",
				n, priced.CPUUs-llm.CPUUs, priced.CPUUs/llm.CPUUs, priced.HostCalls-llm.HostCalls, priced.GuestCalls-llm.GuestCalls)
		}
		if ad, body := sc["admitted"], sc["body_key"]; ad != nil && body != nil {
			fmt.Fprintf(w, "%s: the body key (body_key - admitted): %+.1f µs CPU per request (%.2f× admitted), %+.0f host calls, %+.0f guest calls\n",
				n, body.CPUUs-ad.CPUUs, body.CPUUs/ad.CPUUs, body.HostCalls-ad.HostCalls, body.GuestCalls-ad.GuestCalls)
		}
	}
	printRPCBatch(w, r)
	printImports(w, r, names)
	printScan(w, r, names)
	fmt.Fprintln(w, "\n| module | memory after start | after warm-up | after N requests | start-up per VM: first (compile + start) | next VMs | _initialize | configure |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, n := range names {
		m := r.Modules[n]
		vms := m.Startup.VMs
		var next []float64
		for _, v := range vms[1:] {
			next = append(next, v.InstantiateMs+v.StartMs)
		}
		sort.Float64s(next)
		nextMs := "–"
		if len(next) > 0 {
			nextMs = fmt.Sprintf("%.0f ms", next[len(next)/2])
		}
		fmt.Fprintf(w, "| %s | %s MiB | %s MiB | %s MiB (N = %d) | %.0f ms | %s | %.0f ms | %.0f ms |\n", n,
			mib(m.Memory.AfterStart), mib(m.Memory.AfterWarmup), mib(m.Memory.AfterRequests), m.Memory.Requests,
			m.Startup.CompileMs+vms[0].InstantiateMs+vms[0].StartMs, nextMs, vms[0].Initialize, vms[0].Configure)
	}
}

// printScan writes the stream reading table: per module and chunk size,
// CPU and guest µs per MiB with response_cost (every chunk read and
// scanned) and without (the callback only), and the difference.
func printScan(w io.Writer, r benchResults, names []string) {
	type key struct {
		module string
		chunk  int
	}
	rows := map[key]map[string]scanResult{}
	var keys []key
	for _, n := range names {
		for _, s := range r.Modules[n].Scan {
			k := key{n, s.Chunk}
			if rows[k] == nil {
				rows[k] = map[string]scanResult{}
				keys = append(keys, k)
			}
			rows[k][s.Kind] = s
		}
	}
	if len(keys) == 0 {
		return
	}
	sort.SliceStable(keys, func(i, j int) bool { return keys[i].chunk < keys[j].chunk })
	var bytes int
	for _, k := range keys {
		bytes = rows[k]["plain"].Bytes
	}
	fmt.Fprintf(w, "\nReading a text/event-stream response (%d bytes of OpenAI chat chunk events, then usage), per MiB of body: with response_cost (scan) and without (plain: the callback only). CPU: the process's in the body callbacks, median of the rounds; guest: the guest's own part, from a timed VM.\n\n", bytes)
	fmt.Fprintln(w, "| module | chunk | chunks/MiB | scan CPU µs/MiB | plain CPU µs/MiB | scan adds µs/MiB | scan guest µs/MiB | plain guest µs/MiB | host calls/chunk: scan / plain |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, k := range keys {
		p := rows[k]["plain"]
		perMiB := float64(p.Chunks) * (1 << 20) / float64(p.Bytes)
		sc, ok := rows[k]["scan"]
		if !ok {
			fmt.Fprintf(w, "| %s | %d KiB | %.0f | – | %.0f | – | – | %.0f | – / %.1f |\n", k.module, k.chunk>>10, perMiB,
				p.CPUUsPerMiB, p.GuestUsPerMiB, p.HostCallsPerChunk)
			continue
		}
		fmt.Fprintf(w, "| %s | %d KiB | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.1f / %.1f |\n", k.module, k.chunk>>10, perMiB,
			sc.CPUUsPerMiB, p.CPUUsPerMiB, sc.CPUUsPerMiB-p.CPUUsPerMiB, sc.GuestUsPerMiB, p.GuestUsPerMiB,
			sc.HostCallsPerChunk, p.HostCallsPerChunk)
	}
}

// printImports writes, per module and scenario, where the host calls of a
// request come from: each import and its calls per request.
func printImports(w io.Writer, r benchResults, names []string) {
	fmt.Fprintln(w, "\nHost calls per request, by import:")
	for _, sc := range []string{"admitted", "denied", "cached", "body_key"} {
		for _, n := range names {
			s := r.Modules[n].Scenarios[sc]
			if s == nil || len(s.HostCallsByImport) == 0 {
				continue
			}
			imports := slices.Sorted(maps.Keys(s.HostCallsByImport))
			var parts []string
			for _, k := range imports {
				parts = append(parts, fmt.Sprintf("%s %.4g", strings.TrimPrefix(k, "env."), s.HostCallsByImport[k]))
			}
			fmt.Fprintf(w, "- %s %s: %s\n", n, sc, strings.Join(parts, ", "))
		}
	}
}

// printRPCBatch writes, per build, a JSON-RPC batch's CPU per batch and
// per call beside one body_key request (issue 33's goal: a call at most
// 0.25× such a request).
func printRPCBatch(w io.Writer, r benchResults) {
	for _, n := range []string{"higress", "stock"} {
		sc := r.Modules[n].Scenarios
		body, batch := sc["body_key"], sc["jsonrpc_batch"]
		if body == nil || batch == nil {
			continue
		}
		perCall := batch.CPUUs / rpcBatchCalls
		fmt.Fprintf(w, "%s: a JSON-RPC batch of %d calls (jsonrpc_batch): %.1f µs CPU per batch, %.2f µs per call (%.2f× one body_key request, %.1f µs), %.0f host calls, %.0f guest calls, guest %.1f µs per batch\n",
			n, rpcBatchCalls, batch.CPUUs, perCall, perCall/body.CPUUs, body.CPUUs, batch.HostCalls, batch.GuestCalls, batch.GuestUs)
	}
}
