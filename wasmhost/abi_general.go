package wasmhost

import (
	"time"
)

// Host functions that are not about HTTP streams or callouts.

func hLog(v *vm, a args) uint32 {
	msg, ok := v.readString(a.u32(1), a.u32(2))
	if !ok {
		return statusInvalidMemoryAccess
	}
	level := LogLevel(a.u32(0))
	if level > LogCritical {
		return statusBadArgument
	}
	v.h.addLog(LogEntry{VM: v.index, Level: level, Source: SourceGuest, Message: msg})
	return statusOK
}

// hGetLogLevel reports trace: the host keeps every line.
func hGetLogLevel(v *vm, a args) uint32 {
	if !v.writeU32(a.u32(0), uint32(LogTrace)) {
		return statusInvalidMemoryAccess
	}
	return statusOK
}

func hGetCurrentTime(v *vm, a args) uint32 {
	if !v.writeU64(a.u32(0), uint64(time.Now().UnixNano())) {
		return statusInvalidMemoryAccess
	}
	return statusOK
}

func hSetTickPeriod(v *vm, a args) uint32 {
	v.setTick(time.Duration(a.u32(0)) * time.Millisecond)
	return statusOK
}

// hSetEffectiveContext switches the context later host calls of this guest
// call act on; an unknown id is BadArgument, as in proxy-wasm-cpp-host.
func hSetEffectiveContext(v *vm, a args) uint32 {
	id := a.u32(0)
	if id != v.rootID && v.streams[id] == nil {
		return statusBadArgument
	}
	v.effective = id
	return statusOK
}

// hDone accepts proxy_done; the host does not wait for it when closing.
func hDone(*vm, args) uint32 { return statusOK }

// hCallForeignFunction: the host registers no foreign functions, and Envoy
// answers NotFound for an unknown one.
func hCallForeignFunction(v *vm, a args) uint32 {
	if _, ok := v.read(a.u32(0), a.u32(1)); !ok {
		return statusInvalidMemoryAccess
	}
	return statusNotFound
}

func hGetSharedData(v *vm, a args) uint32 {
	key, ok := v.readString(a.u32(0), a.u32(1))
	if !ok {
		return statusInvalidMemoryAccess
	}
	val, cas, found := v.h.shared.get(key)
	if !found {
		return statusNotFound
	}
	if st := v.copyOut(val, a.u32(2), a.u32(3)); st != statusOK {
		return st
	}
	if !v.writeU32(a.u32(4), cas) {
		return statusInvalidMemoryAccess
	}
	return statusOK
}

func hSetSharedData(v *vm, a args) uint32 {
	key, ok1 := v.readString(a.u32(0), a.u32(1))
	val, ok2 := v.read(a.u32(2), a.u32(3))
	if !ok1 || !ok2 {
		return statusInvalidMemoryAccess
	}
	return v.h.shared.set(key, val, a.u32(4))
}

func hRegisterSharedQueue(v *vm, a args) uint32 {
	name, ok := v.readString(a.u32(0), a.u32(1))
	if !ok {
		return statusInvalidMemoryAccess
	}
	id := v.h.queues.register(v.h.cfg.VMID, name, v)
	if !v.writeU32(a.u32(2), id) {
		return statusInvalidMemoryAccess
	}
	return statusOK
}

func hResolveSharedQueue(v *vm, a args) uint32 {
	vmID, ok1 := v.readString(a.u32(0), a.u32(1))
	name, ok2 := v.readString(a.u32(2), a.u32(3))
	if !ok1 || !ok2 {
		return statusInvalidMemoryAccess
	}
	if vmID == "" {
		vmID = v.h.cfg.VMID
	}
	id, found := v.h.queues.resolve(vmID, name)
	if !found {
		return statusNotFound
	}
	if !v.writeU32(a.u32(4), id) {
		return statusInvalidMemoryAccess
	}
	return statusOK
}

func hEnqueueSharedQueue(v *vm, a args) uint32 {
	item, ok := v.read(a.u32(1), a.u32(2))
	if !ok {
		return statusInvalidMemoryAccess
	}
	id := a.u32(0)
	owner, st := v.h.queues.enqueue(id, item)
	if st != statusOK {
		return st
	}
	owner.post(func() {
		owner.call("proxy_on_queue_ready", owner.fn.queueReady, owner.rootID, uint64(owner.rootID), uint64(id))
	})
	return statusOK
}

func hDequeueSharedQueue(v *vm, a args) uint32 {
	item, st := v.h.queues.dequeue(a.u32(0))
	if st != statusOK {
		return st
	}
	return v.copyOut(item, a.u32(1), a.u32(2))
}

func hDefineMetric(v *vm, a args) uint32 {
	name, ok := v.readString(a.u32(1), a.u32(2))
	if !ok {
		return statusInvalidMemoryAccess
	}
	id, st := v.h.metrics.define(a.u32(0), name)
	if st != statusOK {
		return st
	}
	if !v.writeU32(a.u32(3), id) {
		return statusInvalidMemoryAccess
	}
	return statusOK
}

func hIncrementMetric(v *vm, a args) uint32 {
	return v.h.metrics.increment(a.u32(0), a.i64(1))
}

func hRecordMetric(v *vm, a args) uint32 {
	return v.h.metrics.record(a.u32(0), uint64(a.i64(1)))
}

func hGetMetric(v *vm, a args) uint32 {
	val, st := v.h.metrics.get(a.u32(0))
	if st != statusOK {
		return st
	}
	if !v.writeU64(a.u32(1), val) {
		return statusInvalidMemoryAccess
	}
	return statusOK
}
