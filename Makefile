# packd: make run (serve an example pack), make test (everything CI runs).
GO        ?= go
BIN       := bin/packd
WASM_ENV  := GOOS=wasip1 GOARCH=wasm
EXAMPLES  := wasm-examples/echo/echo.wasm wasm-examples/hello/hello.wasm wasm-examples/c-echo/echo.wasm wasm-examples/c-conformance/conformance.wasm wasm-examples/conformance/conformance.wasm testdata/gocanary/gocanary.wasm testdata/gonet/gonet.wasm testdata/cnet/cnet.wasm
WAT       := $(wildcard testdata/*/*.wat)
WAT2WASM  := $(shell command -v wat2wasm 2>/dev/null)
# Every .go file below here but build/, found by make itself (no find(1)).
rwildcard  = $(foreach d,$(wildcard $(1:=/*)),$(call rwildcard,$(d),$(2)) $(filter $(subst *,%,$(2)),$(d)))
GOFILES   := $(filter-out ./build/%,$(call rwildcard,.,*.go))

.SECONDEXPANSION:

.PHONY: image image-check c-sdk-test all build wasm fixtures run test test-all fairload deadlineload spectest e2e vet bench loadtest memtest ajv-golden clean

all: build wasm

build: $(BIN)

$(BIN): $(GOFILES) go.mod go.sum
	CGO_ENABLED=0 $(GO) build -buildvcs=auto -o $@ ./cmd/packd 2>/dev/null || CGO_ENABLED=0 $(GO) build -buildvcs=false -o $@ ./cmd/packd

wasm: $(EXAMPLES)

# C packs: sdk/c/kindgi.h with Debian's clang, lld, wasi-libc and
# libclang-rt-14-dev-wasm32 (.ci/run installs them).
CLANG     ?= clang
CFLAGS_WASM := --target=wasm32-wasi -mexec-model=reactor -mbulk-memory -O2 -Wall
wasm-examples/c-%.wasm: sdk/c/kindgi.h $$(wildcard wasm-examples/c-$$(*D)/*.c)
	@command -v $(CLANG) >/dev/null || { echo "clang not found: the C packs need Debian's clang lld wasi-libc libclang-rt-14-dev-wasm32 (scripts/deps installs them)" >&2; exit 1; }
	$(CLANG) $(CFLAGS_WASM) -o $@ $(basename $@).c

testdata/cnet/cnet.wasm: sdk/c/kindgi.h testdata/cnet/cnet.c
	@command -v $(CLANG) >/dev/null || { echo "clang not found: the C packs need Debian's clang lld wasi-libc libclang-rt-14-dev-wasm32 (scripts/deps installs them)" >&2; exit 1; }
	$(CLANG) $(CFLAGS_WASM) -o $@ testdata/cnet/cnet.c

wasm-examples/%.wasm testdata/%.wasm: $(GOFILES) go.mod
	$(WASM_ENV) $(GO) build -buildmode=c-shared -o $@ ./$(dir $@)

# The hostile guests' .wasm are committed; with wabt installed they are
# rebuilt from their .wat so the two never drift apart. A .wat whose first
# line says "wat2wasm --no-check" is invalid on purpose.
fixtures:
ifneq ($(WAT2WASM),)
	@for f in $(WAT); do \
	  flags=--debug-names; head -1 $$f | grep -q 'wat2wasm --no-check' && flags="$$flags --no-check"; \
	  $(WAT2WASM) $$flags $$f -o $${f%.wat}.wasm || exit 1; done
else
	@echo "wat2wasm not found (Debian: apt-get install wabt): using the committed testdata .wasm"
endif

# Serve the echo example pack on the defaults (every interface, PORT or
# 8080) with a fresh token, after printing how to call it.
PORT ?= 8080
run: $(BIN) wasm-examples/echo/echo.wasm
	@token=$$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n'); \
	echo "packd serves the echo pack on port $(PORT) with token $$token"; \
	echo "call it with:"; \
	echo "  curl -s -H 'kindgi-pack-token: $$token' -H 'content-type: application/json' \\"; \
	echo "    -d '{\"v\":2,\"kind\":\"invoke\",\"tool\":{\"id\":\"echo.message\"},\"input\":{\"message\":\"hello\"},\"ctx\":{\"tenantId\":\"t1\",\"runId\":\"r1\"}}' \\"; \
	echo "    http://127.0.0.1:$(PORT)/v1/invoke"; \
	echo "stop it with Ctrl-C"; \
	KINDGI_PACK_SERVICE_TOKEN=$$token PORT=$(PORT) exec $(BIN) --index wasm-examples/echo/index.json

# The Go SDK (abi/guest) is a module of its own: vetted and tested in it.
vet:
	$(GO) vet ./...
	cd abi/guest && $(GO) vet ./... && $(WASM_ENV) $(GO) vet ./...
	$(GO) vet -tags spectest ./sandbox/internal/instrument
	$(WASM_ENV) $(GO) vet ./wasm-examples/... ./testdata/gocanary ./testdata/gonet

# make test: scripts/deps installs what the tests need when it is missing
# (Debian packages, Go modules) or stops at once with the command to run;
# then every test, none of them skipped.
test:
	scripts/deps
	$(MAKE) --no-print-directory test-all

# Every test, with what scripts/deps installs already there.
test-all: build wasm fixtures vet
	PACKD_BINARY=$(CURDIR)/$(BIN) $(GO) test -race -count=1 -timeout 8m ./...
	cd abi/guest && $(GO) test -race -count=1 -timeout 2m ./...
	$(MAKE) --no-print-directory c-sdk-test
	$(MAKE) --no-print-directory image-check
	$(MAKE) --no-print-directory spectest
	$(MAKE) --no-print-directory e2e

# The container image (Dockerfile, target prebuilt): bin/packd (static:
# CGO_ENABLED=0; the binary the black-box suite tests) and the echo pack, with podman or docker, whichever is installed.
ENGINE ?= $(shell command -v podman 2>/dev/null || command -v docker 2>/dev/null)
IMAGE  ?= packd:dev
# The image ships a warm compilation cache for its pack (bin/image-cache,
# made by packd check with that binary, at /cache): a new node starts warm,
# read-only root or not, when its CPU has the features of the machine
# that made it (wazero's entries are per CPU; a module the cache lacks
# compiles at start).
image: $(BIN) wasm-examples/echo/echo.wasm
	@test -n "$(ENGINE)" || { echo "make image needs podman or docker (Debian: apt-get install podman)" >&2; exit 1; }
	rm -rf bin/image-cache
	$(BIN) check --index wasm-examples/echo/index.json --cache-dir bin/image-cache >/dev/null
	$(ENGINE) build --target prebuilt -t $(IMAGE) .

# The image as an orchestrator sees it: user, entrypoint, ports, stop
# signal, size (deploy/check-image.sh).
image-check: image
	PACKD_IMAGE=$(IMAGE) PACKD_ENGINE=$(ENGINE) deploy/check-image.sh

# The C SDK's reader and writer, built natively and run (under valgrind
# when it is installed).
c-sdk-test:
	@mkdir -p build
	$(CLANG) -Wall -Wextra -Wno-missing-field-initializers -Werror -gdwarf-4 -o build/kindgi_test sdk/c/test/kindgi_test.c
	@if command -v valgrind >/dev/null; then valgrind --error-exitcode=1 --leak-check=full -q build/kindgi_test; \
	else echo "valgrind not found (scripts/deps installs it): the C SDK test runs without it"; build/kindgi_test; fi

# The official WebAssembly spec testsuite (wazero's converted copy) through
# the fuel pass: every module, assertion and refusal (see
# sandbox/internal/instrument/spec_test.go). Uses wasm-validate when wabt
# is installed.
spectest:
	$(GO) mod download github.com/tetratelabs/wazero
	@mkdir -p build; $(GO) test -tags spectest -count=1 -timeout 5m -v -run TestSpecSuite ./sandbox/internal/instrument >build/spectest.log 2>&1; \
	rc=$$?; grep -v -e '^=== RUN' -e '^    --- PASS' -e '^--- PASS' build/spectest.log; exit $$rc

# promtool on a real scrape of a running packd, and a real Prometheus server
# scraping it (needs Debian's prometheus package).
e2e: build wasm
	$(GO) test -tags e2e -count=1 -timeout 3m -run 'Promtool|Prometheus' ./cmd/packd

bench: build wasm fixtures
	-$(GO) run ./cmd/callbench
	$(GO) test -run '^$$' -bench FuelRatio -benchtime 200x -count 3 ./sandbox
	$(GO) test -run '^$$' -bench 'FuelPace|DeadlineOvershoot' -benchtime 5x ./sandbox
	$(GO) test -run '^$$' -bench FuelRate -benchtime 40x -count 3 ./sandbox
	$(GO) test -run '^$$' -bench ResetAfterBigWrite -benchtime 20x ./sandbox
	$(GO) test -run '^$$' -bench DecodeKeys ./internal/ojson
	$(GO) test -run '^$$' -bench InstantiateAtTheBounds ./sandbox/internal/instrument
	$(GO) test -run '^$$' -bench 'Call|Baseline|Dispatch|Egress' -benchmem -count 5 ./sandbox ./host
	$(GO) build -o bin/startbench ./cmd/startbench
	-bin/startbench $(BIN) wasm-examples/echo/echo.wasm 1,10,50

# Throughput and latency of /v1/invoke with the echo pack next to a plain
# echo handler in the same server, at concurrency 1 and 32, and RSS after
# 10k and 100k calls (installs wrk from Debian when it is missing).
loadtest: build wasm
	$(GO) build -o bin/loadtest ./cmd/loadtest
	cmd/loadtest/run.sh

# Tenant B's calls alone and beside tenant A's flood, with fair shares on
# and off: B's refusals and p99 both ways.
fairload: build wasm-examples/conformance/conformance.wasm fixtures
	$(GO) build -o bin/fairload ./cmd/fairload
	bin/fairload $(BIN) wasm-examples/conformance/index.json testdata/hostile/hog.wasm on
	bin/fairload $(BIN) wasm-examples/conformance/index.json testdata/hostile/hog.wasm off

# 1,000 calls at twice a 2-core machine's concurrency with deadlines of
# 20-300 ms, half spinning guests: results after their deadline (none) and
# the overshoot of deadline-exceeded answers.
deadlineload: build wasm-examples/conformance/conformance.wasm fixtures
	$(GO) build -o bin/deadlineload ./cmd/deadlineload
	bin/deadlineload $(BIN) .

# RSS of packd serve at its defaults under a burst of 64 memory-hungry calls
# (192 MiB each), and how soon it returns to idle (about a minute; Linux).
memtest: build fixtures
	$(GO) run ./cmd/memtest -packd $(BIN)

# Regenerate testdata/ajv/golden.json with real Ajv (needs node and npm);
# testdata/ajv/matrix.py first rewrites the keyword x instance-type cases.
ajv-golden:
	python3 testdata/ajv/matrix.py
	npm install --silent --prefix build/ajv ajv@8 ajv-formats@3
	node testdata/ajv/gen.mjs $(CURDIR)/build/ajv

clean:
	rm -rf bin build $(EXAMPLES)
