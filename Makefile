# The two set-up commands are `make demo` and `make test`; see README.md.
#
# Six Go modules, joined by go.work: the filter (this folder: what ships,
# needing only the proxy-wasm SDK), wasmhost (the proxy-wasm host
# on wazero), cmd/ratelimitctl (the operator's command, on go-redis), and
# e2e, deploy and schema (what proves it).
GO       ?= go
FUZZTIME ?= 30s
DIST     := dist
MODULES  := . wasmhost e2e deploy schema cmd/ratelimitctl
ALL      := github.com/redisrate/envoy-redis-ratelimit/...
# -trimpath and -buildvcs=false: the same source and Go give the same bytes
# in any folder and checkout, so the images' digests can be pinned.
WASM     := GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -trimpath -buildvcs=false

.PHONY: build image pin fixtures deps test bench baseline peer fuzz check demo soak clean diagrams

# The two filter modules users load, and the two commands: the wasm host
# (dist/wasmhost) and the operator's tool (dist/ratelimitctl).
build:
	$(GO) build $(ALL)
	$(WASM) -o $(DIST)/ratelimit.wasm .
	$(WASM) -tags higress -o $(DIST)/ratelimit-higress.wasm .
	$(GO) build -o $(DIST)/wasmhost ./wasmhost/cmd/wasmhost
	$(GO) build -o $(DIST)/ratelimitctl ./cmd/ratelimitctl

# An OCI image of each module, as Istio, Envoy Gateway and Higress fetch
# it: dist/image/<name>/ (an OCI layout) and dist/image/<name>.tar
# (deploy/README.md, "Images"). No Docker needed.
image: build
	$(GO) run ./deploy/cmd/image

# Sets spec.sha256 in deploy/'s WasmPlugin manifests to the images' digests;
# a test fails while they differ from the build's.
pin: build
	$(GO) run ./deploy/cmd/image -pin

# Guest modules the tests load besides the filter; tests read them from
# dist/ and fail, saying to run this, when they are missing.
fixtures:
	$(WASM) -o $(DIST)/testdata/noop.wasm ./wasmhost/testdata/noop
	$(WASM) -o $(DIST)/testdata/probe.wasm ./wasmhost/testdata/probe
	$(WASM) -o $(DIST)/testdata/sleeper.wasm ./e2e/v8/testdata/sleeper
	$(WASM) -o $(DIST)/testdata/logic.wasm ./e2e/bench/testdata/logic

# Installs redis-server, valkey-server, webdis, node, curl, docker-compose
# and promtool (Debian's prometheus) when missing.
deps:
	@.ci/deps

demo: build
	$(GO) run ./e2e/cmd/demo -wasm $(DIST)/ratelimit-higress.wasm $(DEMO_FLAGS)

# The race detector runs over the filter's module and the host, where the
# concurrency is; the end-to-end, deploy and schema tests run without it
# (under it they take three times as long, most of it compiling and
# running wasm, whose machine code it does not see). Then the tests of the
# Lua (algorithms), of the filter against a real server, of ratelimitctl,
# of a full server through both builds and of the shipped redis.conf run
# again on Valkey (docs/redis.md, Valkey).
test: deps check build fixtures
	$(GO) test -count=1 -race ./... ./wasmhost/...
	$(GO) test -count=1 ./e2e/... ./deploy/... ./schema/... ./cmd/ratelimitctl/...
	REDIS_SERVER=valkey-server $(GO) test -count=1 ./algorithms/ ./filter/ ./internal/redistest/ ./cmd/ratelimitctl/
	REDIS_SERVER=valkey-server $(GO) test -count=1 -run '^(TestFullRedis|TestShippedRedisConf|TestShippedRedisConfClientFlood|TestShippedRedisConfFilterWrites|TestClusterWebdis|TestClusterReshard|TestShippedACLOnCluster)$$' ./e2e/ ./deploy/

# First the V8 table: both builds, a no-op module and BASELINE_REV's
# Higress build (the guard: issue 31's ratios and goals, met or not) in V8
# with Envoy's flags, taking turns in one node process (CPU, host calls,
# memory, start-up per VM; V8_BENCH_N=requests before the memory is read,
# 1000000 unless set). Then
# codec ns/op and allocs; Redis CPU per decision and memory per key for
# each algorithm against go-redis/redis_rate and a naive script, one run;
# the filter's CPU per request natively, in wasm and in the host, side by
# side; throughput, latency and Redis calls through the host with a real
# redis-server; the same on a Redis Cluster of 1 and of 3 masters, a
# Webdis each (CPU per decision); and docs/burst.svg. BENCHMARKS.md
# records a run.
bench: deps build fixtures baseline
	V8_BENCH_BASELINE=$(CURDIR)/$(BASELINE) V8_BENCH_PEER=$(if $(wildcard $(PEER)),$(CURDIR)/$(PEER)) \
		$(GO) test -run '^$$' -bench '^BenchmarkV8$$' -benchtime 1x -count=1 -timeout 45m ./e2e/v8
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./redisproto
	$(GO) test -run '^$$' -bench RedisCost -benchtime 1x -count=1 ./e2e/bench
	$(GO) test -run '^$$' -bench '^BenchmarkRequest' -benchmem -count=1 ./filter
	$(GO) test -run '^$$' -bench '^BenchmarkRequest' -benchmem -count=1 ./e2e/bench
	$(GO) test -run '^$$' -bench '^BenchmarkThroughput$$' -benchtime 1x -count=1 -timeout 15m ./e2e/bench
	$(GO) test -run '^$$' -bench '^BenchmarkLeases$$' -benchtime 1x -count=1 -timeout 15m ./e2e/bench
	$(GO) test -run '^$$' -bench '^BenchmarkCluster$$' -benchtime 1x -count=1 -timeout 15m ./e2e/bench
	$(GO) run ./e2e/cmd/plot -out docs/burst.svg

# BASELINE_REV's Higress module, built from a git worktree of it in a
# temporary folder, once: the release the guard compares with. Its stock
# build is left out (it sends EVALSHA, which the bench's Webdis refuses),
# and so is a library.lua (it predates the Functions library).
BASELINE_REV ?= 13bdab3
BASELINE     := $(DIST)/baseline-$(BASELINE_REV)
baseline: $(BASELINE)/ratelimit-higress.wasm
$(BASELINE)/ratelimit-higress.wasm:
	@set -e; tmp=$$(mktemp -d); out=$(CURDIR)/$(BASELINE); mkdir -p $$out; \
	trap 'git worktree remove --force '$$tmp/src'; rm -rf '$$tmp EXIT; \
	git worktree add -q --detach $$tmp/src $(BASELINE_REV); \
	cd $$tmp/src && $(WASM) -tags higress -o $$out/ratelimit-higress.wasm .

# The peer the guard compares with: Higress's own Redis rate-limit plugin
# (cluster-key-rate-limit, in alibaba/higress plugins/wasm-go/extensions),
# built from a copy of its source outside this repository, PEER_SRC, into
# dist/peer/; `make bench` measures it when it is there. Its modules come
# through the Go module proxy; the checksum database lacks some of them,
# hence GOSUMDB=off for this build only.
PEER := $(DIST)/peer/cluster-key-rate-limit.wasm
peer:
	@test -n "$(PEER_SRC)" || { echo 'make peer: PEER_SRC=<the plugin source folder> (see BENCHMARKS.md, "The peer")'; exit 1; }
	mkdir -p $(DIST)/peer
	cd $(PEER_SRC) && GOWORK=off GOFLAGS=-mod=mod GOSUMDB=off $(WASM) -o $(CURDIR)/$(PEER) .

# The explanatory pictures in docs/ (request-flow.svg, reserve-settle.svg);
# a test fails while they differ from what the command draws.
diagrams:
	$(GO) run ./e2e/cmd/diagrams

# Each fuzz target for FUZZTIME (go test -fuzz takes one target at a time).
fuzz:
	@set -e; for pkg in ./redisproto ./algorithms ./jsonbound ./jsonvalue ./e2e/gjsondiff ./filter ./filter/config ./filter/keyspace ./filter/jsonrpc ./filter/usage ./filter/webdis ./filter/clusterslot ./filter/pathnorm ./filter/ipaddr ./filter/headermap; do \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$target"; \
	    $(GO) test $$pkg -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME); \
	  done; \
	done

# Formatting, vet, and every module tidy (go.mod and go.sum unchanged).
check:
	@out=$$(gofmt -l .); test -z "$$out" || { echo "gofmt would change:"; echo "$$out"; exit 1; }
	$(GO) vet $(ALL)
	@set -e; for m in $(MODULES); do (cd $$m && GOWORK=off $(GO) mod tidy); done
	git diff --exit-code -- '*go.mod' '*go.sum'

clean:
	rm -rf $(DIST)

# One million requests through the wasm host against a real Redis (build tag
# soak, so not part of `make test`): VM memory, pending calls, Redis memory and
# keys before and after. SOAK_REQUESTS=N to change the count.
soak: deps build
	$(GO) test -tags soak -run '^TestSoak$$' -count=1 -v -timeout 60m ./e2e
