# The two set-up commands are `make demo` and `make test`; see README.md.
GO       ?= go
FUZZTIME ?= 30s
DIST     := dist

.PHONY: build test bench fuzz check demo clean

build:
	$(GO) build ./...

test: check
	$(GO) test -count=1 -race ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./redisproto ./algorithms

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
