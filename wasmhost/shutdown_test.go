package wasmhost

import (
	"context"
	"runtime"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/dist"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// A callout that completes while the host closes, its reply queued after
// the VM's proxy_on_done, never reaches the guest: the guest is done, and
// the host's cancel would abort that call and count it as a guest trap.
// Here the late reply is held until that cancel, the interleaving a busy
// machine gives when a stream's release to Webdis is answered at Close.
func TestNoGuestCallAfterDone(t *testing.T) {
	wasm, err := dist.Read(dist.Noop)
	if err != nil {
		t.Fatal(err)
	}
	var opts []CompileOption
	if dir, err := dist.CacheDir(); err == nil {
		opts = append(opts, WithCacheDir(dir))
	}
	mod, err := Compile(context.Background(), wasm, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close(context.Background())
	h, err := Start(context.Background(), Config{Module: mod, Workers: 1, Upstream: "http://" + redistest.HoldPort(t).Addr()})
	if err != nil {
		t.Fatal(err)
	}
	v := h.vms[0]
	busy, release := make(chan struct{}), make(chan struct{})
	v.post(func() { close(busy); <-release }) // the loop is busy
	<-busy
	closed := make(chan struct{})
	go func() { h.Close(); close(closed) }()
	for queued := 0; queued == 0; { // Close has queued the VM's shutdown
		v.tasks.mu.Lock()
		queued = len(v.tasks.fns)
		v.tasks.mu.Unlock()
		runtime.Gosched()
	}
	late := false
	v.post(func() {
		<-v.ctx.Done()
		late = true
		v.httpCallDone(4, &calloutResponse{failed: true})
	})
	close(release)
	<-closed
	if n := h.Traps(); n != 0 || late {
		t.Fatalf("a callout's reply queued after proxy_on_done reached the guest (%t): %d traps\n%v", late, n, h.Logs())
	}
}
