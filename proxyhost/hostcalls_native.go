//go:build !wasip1

package proxyhost

import (
	"encoding/binary"
	"time"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"
)

// Natively (the SDK's emulator), the SDK's calls stand in for the direct
// ones of hostcalls_wasm.go.

func requestHeaderMap() []byte {
	pairs, err := proxywasm.GetHttpRequestHeaders()
	if err != nil {
		return nil
	}
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(pairs)))
	for _, p := range pairs {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(p[0])))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(p[1])))
	}
	for _, p := range pairs {
		b = append(append(b, p[0]...), 0)
		b = append(append(b, p[1]...), 0)
	}
	return b
}

var start = time.Now()

func monotonicNanos() int64 { return int64(time.Since(start)) }
