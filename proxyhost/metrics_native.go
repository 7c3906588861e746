//go:build !wasip1

package proxyhost

import "github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"

// Natively (the SDK's emulator), metrics go through the SDK; the wasm
// build calls the host itself (metrics_wasm.go).

type (
	counterMetric   = proxywasm.MetricCounter
	histogramMetric = proxywasm.MetricHistogram
	gaugeMetric     = proxywasm.MetricGauge
)

func defineCounter(name string) counterMetric { return proxywasm.DefineCounterMetric(name) }

func defineHistogram(name string) histogramMetric { return proxywasm.DefineHistogramMetric(name) }

func defineGauge(name string) gaugeMetric { return proxywasm.DefineGaugeMetric(name) }
