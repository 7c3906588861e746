//go:build wasip1

package proxyhost

// flushMetricsExport is FlushMetrics for test hosts (wasmhost, e2e/v8),
// which call it, when the module exports it, before reading metrics.
// Envoy never calls it: it reads what the ticks flushed.
//
//go:wasmexport ratelimit_flush_metrics
func flushMetricsExport() { FlushMetrics() }
