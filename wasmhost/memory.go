package wasmhost

import (
	"fmt"

	"github.com/tetratelabs/wazero/api"
)

// args are the raw parameters of a host function call. Every i32 must be
// read with api.DecodeU32: the upper 32 bits of the uint64 are not defined.
type args []uint64

func (a args) u32(i int) uint32 { return api.DecodeU32(a[i]) }
func (a args) i64(i int) int64  { return int64(a[i]) }

// read copies size bytes of guest memory at ptr. The copy matters: a later
// allocation in the guest may grow, and so move, its memory.
func (v *vm) read(ptr, size uint32) ([]byte, bool) {
	if size == 0 {
		return nil, true
	}
	b, ok := v.mod.Memory().Read(ptr, size)
	if !ok {
		return nil, false
	}
	return append([]byte(nil), b...), true
}

func (v *vm) readString(ptr, size uint32) (string, bool) {
	b, ok := v.read(ptr, size)
	return string(b), ok
}

func (v *vm) writeU32(ptr, value uint32) bool {
	return v.mod.Memory().WriteUint32Le(ptr, value)
}

func (v *vm) writeU64(ptr uint32, value uint64) bool {
	return v.mod.Memory().WriteUint64Le(ptr, value)
}

// copyOut hands data to the guest the way proxy-wasm-cpp-host does: it
// allocates guest memory with proxy_on_memory_allocate, copies data there
// and stores the pointer and size at ptrPtr and sizePtr. Empty data is
// returned as a null pointer and size 0 without allocating (the Go SDK's
// allocator cannot allocate 0 bytes). The allocator runs with host calls
// restricted (restricted.go); a trap there fails the VM.
func (v *vm) copyOut(data []byte, ptrPtr, sizePtr uint32) uint32 {
	var ptr uint32
	if len(data) > 0 {
		v.restrict("proxy_on_memory_allocate", mallocAllowed(v.h.cfg.CppHost))
		res, err := v.fn.malloc.Call(v.ctx, uint64(len(data)))
		v.unrestrict()
		if err != nil {
			v.fail(fmt.Errorf("proxy_on_memory_allocate(%d): %w", len(data), err))
			return statusInvalidMemoryAccess
		}
		if len(res) == 0 {
			return statusInvalidMemoryAccess
		}
		ptr = api.DecodeU32(res[0])
		if ptr == 0 || !v.mod.Memory().Write(ptr, data) {
			return statusInvalidMemoryAccess
		}
	}
	if !v.writeU32(ptrPtr, ptr) || !v.writeU32(sizePtr, uint32(len(data))) {
		return statusInvalidMemoryAccess
	}
	return statusOK
}
