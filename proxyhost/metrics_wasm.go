//go:build wasip1

package proxyhost

import (
	"errors"
	"strconv"
	"unsafe"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"
)

// Metrics through the host calls themselves, not the SDK's wrappers: these
// panic with fmt.Sprintf, which would link fmt into the module for a
// message. On a host error they panic as the SDK's do, with its message.

//go:wasmimport env proxy_define_metric
func proxyDefineMetric(metricType uint32, name *byte, nameLen int32, id *uint32) uint32

//go:wasmimport env proxy_increment_metric
func proxyIncrementMetric(id uint32, offset int64) uint32

//go:wasmimport env proxy_record_metric
func proxyRecordMetric(id uint32, value uint64) uint32

// The metric types of the ABI (proxy_define_metric).
const (
	metricCounter   = 0
	metricGauge     = 1
	metricHistogram = 2
)

type (
	counterMetric   uint32
	histogramMetric uint32
	gaugeMetric     uint32
)

// defineMetric defines a metric; prefix starts the SDK's panic message,
// which differs by kind.
func defineMetric(kind uint32, name, prefix string) uint32 {
	var id uint32
	var p *byte
	if name != "" {
		p = unsafe.StringData(name)
	}
	if s := proxyDefineMetric(kind, p, int32(len(name)), &id); s != 0 {
		panic(prefix + "define metric of name " + name + ": " + statusError(s).Error())
	}
	return id
}

func defineCounter(name string) counterMetric {
	return counterMetric(defineMetric(metricCounter, name, ""))
}

func defineHistogram(name string) histogramMetric {
	return histogramMetric(defineMetric(metricHistogram, name, "error "))
}

func defineGauge(name string) gaugeMetric {
	return gaugeMetric(defineMetric(metricGauge, name, "error "))
}

func (m counterMetric) Increment(offset uint64) {
	if s := proxyIncrementMetric(uint32(m), int64(offset)); s != 0 {
		panic("increment " + strconv.FormatUint(uint64(m), 10) + " by " + strconv.FormatUint(offset, 10) + ": " + statusError(s).Error())
	}
}

func (m histogramMetric) Record(value uint64) {
	if s := proxyRecordMetric(uint32(m), value); s != 0 {
		panic("error adding " + strconv.FormatUint(uint64(m), 10) + ": " + statusError(s).Error())
	}
}

func (m gaugeMetric) Add(offset int64) {
	if s := proxyIncrementMetric(uint32(m), offset); s != 0 {
		panic("error adding " + strconv.FormatUint(uint64(m), 10) + " by " + strconv.FormatInt(offset, 10) + ": " + statusError(s).Error())
	}
}

// statusError is the SDK's error for a host call's status (an unsigned
// number, as the SDK reads it).
func statusError(s uint32) error {
	switch s {
	case 1:
		return types.ErrorStatusNotFound
	case 2:
		return types.ErrorStatusBadArgument
	case 7:
		return types.ErrorStatusEmpty
	case 8:
		return types.ErrorStatusCasMismatch
	case 10:
		return types.ErrorInternalFailure
	case 12:
		return types.ErrorUnimplemented
	}
	return errors.New("unknown status code: " + strconv.FormatUint(uint64(s), 10))
}
