package wasmhost

import (
	"context"
	"time"
)

// CanaryVM is the VM index of the configuration canary in log entries.
const CanaryVM = -2

// runCanary starts the plugin once on a throwaway VM before any worker VM,
// as proxy-wasm-cpp-host's WasmHandleBase::canary (src/wasm.cc) does for
// each new plugin configuration: _initialize, proxy_on_context_create,
// proxy_on_vm_start and proxy_on_configure. If any fails, Envoy rejects the
// configuration (or does not start). The canary VM is then dropped without
// proxy_on_done, as WasmHandleBase::kill drops it; its ticks and Redis
// clients stop with it.
func (h *Host) runCanary(ctx context.Context) error {
	v := newVM(h, CanaryVM)
	err := v.run(func() error { return v.start(ctx) })
	if cerr := v.shutdown(false); err == nil {
		err = cerr
	}
	return err
}

// shutdown stops the VM's plugin and loop and releases the instance, as
// Host.Close does for each VM. With callDone the root context gets
// proxy_on_done first.
func (v *vm) shutdown(callDone bool) error {
	done := make(chan struct{})
	if v.post(func() {
		if callDone {
			v.close()
		} else {
			v.discard()
		}
		v.closed = true // the loop stops here: a task queued later (a callout's reply) must not call the guest
		close(done)
	}) {
		select {
		case <-done:
		case <-v.loopDone:
		case <-time.After(5 * time.Second):
			v.h.hostLog(v.index, LogError, "vm did not shut down in 5s; aborting it")
		}
	}
	v.tasks.shut()
	v.cancel()
	<-v.loopDone
	v.callouts.Wait()
	if v.mod != nil {
		return v.mod.Close(context.Background())
	}
	return nil
}
