package wasmhost

import (
	"crypto/rand"
	"io"
	"sort"
	"time"
)

// The WASI functions as proxy-wasm-cpp-host implements them
// (src/exports.cc), except where wasi.go says otherwise.

// stdioOnly answers res for fds 1 and 2 and EBADF for any other.
func stdioOnly(res uint32) func(*vm, args) uint32 {
	return func(_ *vm, a args) uint32 {
		if fd := a.u32(0); fd != 1 && fd != 2 {
			return errnoBadf
		}
		return res
	}
}

// logged logs msg as an error, as proxy-wasm-cpp-host does for fd_seek,
// fd_close and proc_exit, and returns success. proc_exit returns: the
// guest goes on, and a Go guest then traps.
func logged(msg string) func(*vm, args) uint32 {
	return func(v *vm, _ args) uint32 {
		v.h.hostLog(v.index, LogError, "%s", msg)
		return errnoSuccess
	}
}

// zeroU32Then stores a 32-bit 0 at the pointer in argument i and returns res.
func zeroU32Then(i int, res uint32) func(*vm, args) uint32 {
	return func(v *vm, a args) uint32 {
		if !v.writeU32(a.u32(i), 0) {
			return errnoFault
		}
		return res
	}
}

// wTwoZeros answers args_sizes_get: no arguments.
func wTwoZeros(v *vm, a args) uint32 {
	if !v.writeU32(a.u32(0), 0) || !v.writeU32(a.u32(1), 0) {
		return errnoFault
	}
	return errnoSuccess
}

// environ lists Config.Env as "KEY=value", sorted (Envoy's order is its
// map's).
func (v *vm) environ() []string {
	env := make([]string, 0, len(v.h.cfg.Env))
	for k, val := range v.h.cfg.Env {
		env = append(env, k+"="+val)
	}
	sort.Strings(env)
	return env
}

func wEnvironSizesGet(v *vm, a args) uint32 {
	env := v.environ()
	size := 0
	for _, e := range env {
		size += len(e) + 1
	}
	if !v.writeU32(a.u32(0), uint32(len(env))) || !v.writeU32(a.u32(1), uint32(size)) {
		return errnoFault
	}
	return errnoSuccess
}

func wEnvironGet(v *vm, a args) uint32 {
	ptrs, buf := a.u32(0), a.u32(1)
	for _, e := range v.environ() {
		if !v.writeU32(ptrs, buf) || !v.mod.Memory().Write(buf, append([]byte(e), 0)) {
			return errnoFault
		}
		ptrs += 4
		buf += uint32(len(e) + 1)
	}
	return errnoSuccess
}

// wFdWrite sends what the guest writes to fd 1 (info) or 2 (error) to the
// logs, as writevImpl does; any other fd is EBADF.
func wFdWrite(v *vm, a args) uint32 {
	n, errno := v.writev(a.u32(0), a.u32(1), a.u32(2))
	if errno != errnoSuccess {
		return errno
	}
	if !v.writeU32(a.u32(3), n) {
		return errnoFault
	}
	return errnoSuccess
}

func wFdPwrite(v *vm, a args) uint32 {
	if fd := a.u32(0); fd != 1 && fd != 2 {
		return errnoBadf
	}
	n, errno := v.writev(a.u32(0), a.u32(1), a.u32(2))
	if errno != errnoSuccess {
		return errno
	}
	if !v.writeU32(a.u32(4), n) {
		return errnoFault
	}
	return errnoSuccess
}

func (v *vm) writev(fd, iovs, iovsLen uint32) (uint32, uint32) {
	var w io.Writer
	switch fd {
	case 1:
		w = v.stdout
	case 2:
		w = v.stderr
	default:
		return 0, errnoBadf
	}
	var data []byte
	for i := uint32(0); i < iovsLen; i++ {
		iov, ok := v.read(iovs+8*i, 8)
		if !ok {
			return 0, errnoFault
		}
		ptr := uint32(iov[0]) | uint32(iov[1])<<8 | uint32(iov[2])<<16 | uint32(iov[3])<<24
		size := uint32(iov[4]) | uint32(iov[5])<<8 | uint32(iov[6])<<16 | uint32(iov[7])<<24
		b, ok := v.read(ptr, size)
		if !ok {
			return 0, errnoFault
		}
		data = append(data, b...)
	}
	if w != nil && len(data) > 0 {
		w.Write(data)
	}
	return uint32(len(data)), errnoSuccess
}

// wFdFdstatGet describes fds 1 and 2 as cpp-host does: file type 0
// (unknown), no flags (so Go's os package never puts them in its poller),
// rights FD_WRITE. A failed store is ignored, as there.
func wFdFdstatGet(v *vm, a args) uint32 {
	if fd := a.u32(0); fd != 1 && fd != 2 {
		return errnoBadf
	}
	stat := make([]byte, 24)
	stat[8] = 64
	v.mod.Memory().Write(a.u32(1), stat)
	return errnoSuccess
}

var monotonicBase = time.Now()

// wClockTimeGet reads the real clocks: 0 realtime, 1 monotonic; the CPU
// time clocks are ENOTSUP.
func wClockTimeGet(v *vm, a args) uint32 {
	var now uint64
	switch a.u32(0) {
	case 0:
		now = uint64(time.Now().UnixNano())
	case 1:
		now = uint64(time.Since(monotonicBase)) + uint64(time.Hour) // any origin; never 0
	default:
		return errnoNotsup
	}
	if !v.writeU64(a.u32(2), now) {
		return errnoFault
	}
	return errnoSuccess
}

func wClockResGet(v *vm, a args) uint32 {
	if id := a.u32(0); id != 0 && id != 1 {
		return errnoNotsup
	}
	if !v.writeU64(a.u32(1), 1) {
		return errnoFault
	}
	return errnoSuccess
}

func wRandomGet(v *vm, a args) uint32 {
	size := a.u32(1)
	if size > maxRandomSize {
		return errnoInval
	}
	if size == 0 {
		return errnoSuccess
	}
	b := make([]byte, size)
	rand.Read(b)
	if !v.mod.Memory().Write(a.u32(0), b) {
		return errnoFault
	}
	return errnoSuccess
}

// wPollOneoff is ENOSYS before 94091cd. From 94091cd on it stores 0 events
// and returns at once, without sleeping: the Go scheduler then spins
// until its timer is due.
func wPollOneoff(v *vm, a args) uint32 {
	if v.h.cfg.CppHost < CppHost94091cd {
		return errnoNosys
	}
	if !v.writeU32(a.u32(3), 0) {
		return errnoFault
	}
	return errnoSuccess
}

func wFdRenumber(_ *vm, a args) uint32 {
	from, to := a.u32(0), a.u32(1)
	if (from != 1 && from != 2) || (to != 1 && to != 2) {
		return errnoBadf
	}
	return errnoNotsup
}

func wFdTell(v *vm, a args) uint32 {
	if fd := a.u32(0); fd != 1 && fd != 2 {
		return errnoBadf
	}
	if !v.writeU64(a.u32(1), 0) {
		return errnoFault
	}
	return errnoSuccess
}

func wSockAccept(v *vm, a args) uint32 {
	if !v.writeU64(a.u32(2), 0) {
		return errnoFault
	}
	return errnoNotsup
}

func wSockRecv(v *vm, a args) uint32 {
	if !v.writeU32(a.u32(4), 0) || !v.mod.Memory().WriteUint16Le(a.u32(5), 0) {
		return errnoFault
	}
	return errnoNotsup
}
