# packd: make run (serve an example pack), make test (everything CI runs).
GO        ?= go
BIN       := bin/packd
WASM_ENV  := GOOS=wasip1 GOARCH=wasm
EXAMPLES  := wasm-examples/echo/echo.wasm wasm-examples/conformance/conformance.wasm
WAT       := $(wildcard testdata/*/*.wat)
WAT2WASM  := $(shell command -v wat2wasm 2>/dev/null)
GOFILES   := $(shell find . -name '*.go' -not -path './build/*')

.PHONY: all build wasm fixtures run test race vet bench ajv-golden clean

all: build wasm

build: $(BIN)

$(BIN): $(GOFILES) go.mod go.sum
	$(GO) build -o $@ ./cmd/packd

wasm: $(EXAMPLES)

wasm-examples/%.wasm: $(GOFILES) go.mod
	$(WASM_ENV) $(GO) build -buildmode=c-shared -o $@ ./$(dir $@)

# The hostile guests' .wasm are committed; with wabt installed they are
# rebuilt from their .wat so the two never drift apart.
fixtures:
ifneq ($(WAT2WASM),)
	@for f in $(WAT); do $(WAT2WASM) $$f -o $${f%.wat}.wasm || exit 1; done
else
	@echo "wat2wasm not found (Debian: apt-get install wabt): using the committed testdata .wasm"
endif

# Until the HTTP service lands (issue 3), run shows the executor on the echo
# example pack through packd invoke.
run: build wasm
	$(BIN) check --index wasm-examples/echo/index.json
	$(BIN) invoke --index wasm-examples/echo/index.json --tool echo.message --input '{"message":"hello from packd"}'

vet:
	$(GO) vet ./...
	$(WASM_ENV) $(GO) vet ./abi/guest ./wasm-examples/...

test: build wasm fixtures vet
	$(GO) test -race -count=1 ./...

bench: build wasm fixtures
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./sandbox ./host

# Regenerate testdata/ajv/golden.json with real Ajv (needs node and npm).
ajv-golden:
	npm install --silent --prefix build/ajv ajv@8 ajv-formats@3
	node testdata/ajv/gen.mjs $(CURDIR)/build/ajv

clean:
	rm -rf bin build $(EXAMPLES)
