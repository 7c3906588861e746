package v8

import (
	"os"
	"testing"
	"time"
)

// BenchmarkV8JSONRPC is issue 33's V8 figure alone: the jsonrpc_batch
// scenario beside body_key (and admitted, which every run has), both
// builds and the no-op module, without the scan, in about a minute:
//
//	go test -run '^$' -bench '^BenchmarkV8JSONRPC$' -benchtime 1x ./e2e/v8
func BenchmarkV8JSONRPC(b *testing.B) {
	for range b.N {
		r := runBench(b, benchSpec{Modules: benchModules(b), Headers: benchHeaders, Scenarios: []string{"body_key", "jsonrpc_batch"},
			Requests: 2000, Rounds: 7, Warmup: 2000, MemoryRequests: 100, StartupVMs: 1, Bodies: benchBodies}, 10*time.Minute)
		printBench(os.Stdout, r)
		for _, name := range []string{"higress", "stock"} {
			sc := r.Modules[name].Scenarios
			b.ReportMetric(sc["jsonrpc_batch"].CPUUs, name+"-us/batch")
			b.ReportMetric(sc["jsonrpc_batch"].CPUUs/rpcBatchCalls, name+"-us/call")
			b.ReportMetric(sc["jsonrpc_batch"].CPUUs/rpcBatchCalls/sc["body_key"].CPUUs, name+"-call-x-body_key")
		}
	}
}
