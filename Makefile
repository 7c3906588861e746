# The two set-up commands are `make demo` and `make test`; see README.md.
GO       ?= go
FUZZTIME ?= 30s
DIST     := dist

.PHONY: build test bench fuzz check demo clean

build:
	$(GO) build ./...
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -o $(DIST)/ratelimit.wasm .
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -tags higress -o $(DIST)/ratelimit-higress.wasm .

demo: build
	$(GO) run ./e2e/cmd/demo -wasm $(DIST)/ratelimit-higress.wasm

test: check
	$(GO) test -count=1 -race ./...

# Codec ns/op and allocs; then Redis CPU per decision and memory per key for
# each algorithm against go-redis/redis_rate and a naive script, one run;
# the filter's CPU per request natively, in wasm and in the e2e host, side
# by side; throughput, latency and Redis calls through the host with a real
# redis-server; and docs/burst.svg. BENCHMARKS.md records a run.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./redisproto
	$(GO) test -run '^$$' -bench RedisCost -benchtime 1x -count=1 ./algorithms
	$(GO) test -run '^$$' -bench '^BenchmarkRequest$$' -benchmem -count=1 ./filter
	$(GO) test -run '^$$' -bench '^BenchmarkRequest' -benchmem -count=1 ./e2e/bench
	$(GO) test -run '^$$' -bench '^BenchmarkThroughput$$' -benchtime 1x -count=1 -timeout 15m ./e2e/bench
	$(GO) run ./e2e/cmd/plot -out docs/burst.svg

# Each fuzz target for FUZZTIME (go test -fuzz takes one target at a time).
fuzz:
	@set -e; for pkg in ./redisproto ./algorithms ./filter; do \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$target"; \
	    $(GO) test $$pkg -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME); \
	  done; \
	done

check:
	@out=$$(gofmt -l .); test -z "$$out" || { echo "gofmt would change:"; echo "$$out"; exit 1; }
	$(GO) vet ./...
	$(GO) mod tidy && git diff --exit-code -- go.mod go.sum

clean:
	rm -rf $(DIST)

# One million requests through the wasm host against a real Redis (build tag
# soak, so not part of `make test`): VM memory, pending calls, Redis memory and
# keys before and after. SOAK_REQUESTS=N to change the count.
.PHONY: soak
soak:
	$(GO) test -tags soak -run '^TestSoak$$' -count=1 -v -timeout 60m ./e2e
