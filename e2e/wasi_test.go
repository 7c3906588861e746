package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// Envoy 1.33 to 1.38 (proxy-wasm-cpp-host before 94091cd) answer WASI
// poll_oneoff with ENOSYS, and the Go runtime throws as soon as it polls:
// at every garbage collection once anything has set a timer (a first
// crypto/rand read does), or when the scheduler idles with a timer
// pending (golang/go#78513). Each module runs here with that WASI, through
// enough requests for several collections per VM, on the paths a request
// takes (allowed, denied by Redis, denied from the deny cache, shadow): no
// VM may trap (startHostWith checks), the runtime must never start its
// poller, and never call poll_oneoff.
func TestModulesNeverPollUnderEnvoy138WASI(t *testing.T) {
	const rules = `[
	  {"name":"log","key":[{"source":"header","name":"x-user"}],
	   "limits":[{"algorithm":"sliding_log","limit":3,"window":"1m"},{"algorithm":"sliding_counter","limit":50,"window":"10s"}]},
	  {"name":"funnel","key":[{"source":"header","name":"x-user"},{"source":"path"}],
	   "limits":[{"algorithm":"funnel","capacity":5,"rate":1,"period":"1m"}]},
	  {"name":"shadow","shadow":true,"key":[{"source":"constant","value":"all"}],
	   "limits":[{"algorithm":"sliding_log","limit":10,"window":"1m"}]}]`
	for _, kind := range moduleKinds {
		t.Run(kind, func(t *testing.T) {
			wasm := map[string][]byte{"higress": higressWasm, "stock": stockWasm}[kind]
			mod, calls, err := wasmhost.CompileCounting(context.Background(), wasm,
				"runtime.gcStart", "runtime.netpollGenericInit")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { mod.Close(context.Background()) }) // after the host's
			// GOGC=5 (through vm_config.environment_variables) makes the
			// guests collect more often.
			cfg, _ := hostConfig(t, kind, wasmhost.Config{Workers: 2, Upstream: upstream(t).URL,
				CppHost: wasmhost.CppHostBefore94091cd, Env: map[string]string{"GOGC": "5"}},
				fmt.Sprintf(`{"redis":{"cluster":"redis","timeout":"2s","key_prefix":%q},"rules":%s}`, "rl:wasi:"+kind+":", rules), server.Addr)
			cfg.Module = mod
			h := startHost(t, cfg).h

			// Half the requests come from new users (allowed, through
			// Redis), half from 16 users on 4 paths (denied by Redis once
			// per VM, then from the deny cache). Rounds of 400 requests
			// until the VMs have collected garbage 8 times while serving.
			statuses := map[int]int{}
			var mu sync.Mutex
			atStart := calls.Counts()["guest.runtime.gcStart"]
			for round := 0; calls.Counts()["guest.runtime.gcStart"]-atStart < 8; round++ {
				if round == 30 {
					t.Fatalf("only %d garbage collections after %d requests", calls.Counts()["guest.runtime.gcStart"]-atStart, round*400)
				}
				var wg sync.WaitGroup
				for w := 0; w < 8; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; i < 50; i++ {
							req, _ := http.NewRequest("GET", fmt.Sprintf("%s/p%d", h.URL(), i%4), nil)
							user := fmt.Sprintf("new%d", round*400+w*50+i)
							if i%2 == 1 {
								user = fmt.Sprintf("hot%d", (w+i)%16)
							}
							req.Header.Set("x-user", user)
							resp, err := http.DefaultClient.Do(req)
							if err != nil {
								t.Error(err)
								return
							}
							resp.Body.Close()
							mu.Lock()
							statuses[resp.StatusCode]++
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				if t.Failed() {
					return
				}
			}

			counts := calls.Counts()
			t.Logf("statuses %v; in all VMs: %d garbage collections (%d while serving), %d poller starts; WASI calls %v",
				statuses, counts["guest.runtime.gcStart"], counts["guest.runtime.gcStart"]-atStart, counts["guest.runtime.netpollGenericInit"], h.WASICalls())
			if statuses[200] == 0 || statuses[429] == 0 || len(statuses) != 2 {
				t.Errorf("statuses %v, want only 200 and 429", statuses)
			}
			if n := counts["guest.runtime.netpollGenericInit"]; n != 0 {
				t.Errorf("the Go runtime started its poller %d times: its next collection calls poll_oneoff", n)
			}
			if n := h.WASICalls()["poll_oneoff"]; n != 0 {
				t.Errorf("poll_oneoff called %d times", n)
			}
		})
	}
}
