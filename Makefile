# packd: make run (serve an example pack), make test (everything CI runs).
GO        ?= go
BIN       := bin/packd
WASM_ENV  := GOOS=wasip1 GOARCH=wasm
EXAMPLES  := wasm-examples/echo/echo.wasm wasm-examples/hello/hello.wasm wasm-examples/c-echo/echo.wasm wasm-examples/c-conformance/conformance.wasm wasm-examples/conformance/conformance.wasm wasm-examples/mcp-conformance/mcp-conformance.wasm testdata/gocanary/gocanary.wasm testdata/goctx/goctx.wasm testdata/gonet/gonet.wasm testdata/cnet/cnet.wasm \
             wasm-examples/ts-conformance/conformance.wasm wasm-examples/ts-echo/echo.wasm testdata/jscanary/canary.wasm testdata/jsnet/net.wasm testdata/jshostile/hostile.wasm \
             wasm-examples/py-echo/echo.wasm wasm-examples/py-conformance/conformance.wasm testdata/pycanary/canary.wasm testdata/pyhostile/hostile.wasm testdata/pynet/net.wasm
WAT       := $(wildcard testdata/*/*.wat)
WAT2WASM  := $(shell command -v wat2wasm 2>/dev/null)
# Every .go file below here but build/, found by make itself (no find(1)).
rwildcard  = $(foreach d,$(wildcard $(1:=/*)),$(call rwildcard,$(d),$(2)) $(filter $(subst *,%,$(2)),$(d)))
GOFILES   := $(filter-out ./build/%,$(call rwildcard,.,*.go))

.SECONDEXPANSION:

.PHONY: mcp-conformance py-runtime py-runtime-check py-config-cache py-sdk-test js-runtime js-runtime-check js-json-test js-sdk-test image image-check c-sdk-test all build wasm fixtures run test test-all go-test-race go-test-cmd fairload deadlineload spectest e2e vet bench loadtest memtest ajv-golden clean

all: build wasm

build: $(BIN)

# What packd embeds besides Go code (go:embed): a change to one rebuilds it.
EMBEDDED  := internal/host/index.schema.json sdk/c/kindgi.h sdk/js/runtime/runtime.wasm sdk/py/runtime/runtime.wasm.gz sdk/py/runtime/library.json.gz sdk/js/package.json $(wildcard sdk/js/*.js sdk/js/*.d.ts) abi/guest/go.mod

$(BIN): $(GOFILES) $(EMBEDDED) go.mod go.sum
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

# JavaScript and TypeScript packs. packd's JavaScript runtime is QuickJS
# (release 2021-03-27, MIT) from the source in npm's qjsc 0.3.0, checked
# against its SHA-256, built with the C packs' clang and wasi-libc, with
# sdk/js/runtime/runtime.c and prelude.js. The runtime is committed (packd
# embeds it: make run needs only Go); js-runtime-check, in make test,
# holds it to what its sources build, and js-runtime writes it anew.
NPM        ?= npm
QJS_TGZ    := build/qjs/qjsc-0.3.0.tgz
QJS_SHA256 := 4a9ed1852b334d842d5dac42d1782817ae26310b448de39532451fd45c9ba0ee
QJS_SRC    := build/qjs/package/deps/quickjs_2021_03_27
QJS_OBJS   := $(addprefix build/qjs/,quickjs.o libregexp.o libunicode.o cutils.o libbf.o)
# EMSCRIPTEN leaves out what wasm32-wasi lacks (threads, atomics); wasm has
# one rounding mode, so the two QuickJS asks fesetround for get values it
# refuses, and printf's rounding stands.
QJS_CFLAGS := --target=wasm32-wasi -mbulk-memory -O2 -w -funsigned-char -DEMSCRIPTEN -DCONFIG_BIGNUM -DCONFIG_STACK_CHECK -include sdk/js/runtime/qjs-wasm.h \
              -DCONFIG_VERSION='"2021-03-27"' -DFE_DOWNWARD=0x400 -DFE_UPWARD=0x800
JS_RUNTIME := sdk/js/runtime/runtime.wasm
NEED_NPM    = @command -v $(NPM) >/dev/null || { echo "npm not found: the TypeScript packs need Debian's nodejs and npm (scripts/deps installs them)" >&2; exit 1; }

$(QJS_TGZ):
	$(NEED_NPM)
	@mkdir -p build/qjs
	cd build/qjs && $(NPM) pack --silent --no-audit --no-fund qjsc@0.3.0 >/dev/null
	@echo "$(QJS_SHA256)  $@" | sha256sum -c --quiet - || { echo "$@ is not the qjsc 0.3.0 packd was built with" >&2; rm -f $@; exit 1; }

$(QJS_SRC)/quickjs.c: $(QJS_TGZ)
	tar -xzf $(QJS_TGZ) -C build/qjs package/deps/quickjs_2021_03_27
	@touch $@

build/qjs/%.o: $(QJS_SRC)/quickjs.c sdk/js/runtime/qjs-wasm.h
	$(CLANG) $(QJS_CFLAGS) -c $(QJS_SRC)/$*.c -o $@

# quickjs.c is built as one unit with packd's JSON writer and reader
# (json.c), which read and make QuickJS's objects as they are laid out.
build/qjs/quickjs.o: $(QJS_SRC)/quickjs.c sdk/js/runtime/qjs-wasm.h sdk/js/runtime/json.c sdk/js/runtime/json_write.c sdk/js/runtime/json_read.c
	$(CLANG) $(QJS_CFLAGS) -I$(QJS_SRC) -c sdk/js/runtime/json.c -o $@

build/js/prelude.h: sdk/js/runtime/prelude.js
	@mkdir -p build/js
	od -An -v -tx1 $< | sed 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g' >$@

build/js/runtime.wasm: sdk/js/runtime/runtime.c build/js/prelude.h $(QJS_OBJS)
	$(CLANG) --target=wasm32-wasi -mexec-model=reactor -mbulk-memory -O2 -Wall -I$(QJS_SRC) -Ibuild/js \
	  -Wl,--stack-first -Wl,-z,stack-size=1048576 -Wl,--strip-debug -o $@ sdk/js/runtime/runtime.c $(QJS_OBJS)

js-runtime: build/js/runtime.wasm
	cp build/js/runtime.wasm $(JS_RUNTIME)

js-runtime-check: build/js/runtime.wasm
	@cmp -s build/js/runtime.wasm $(JS_RUNTIME) || { echo "$(JS_RUNTIME) is not what sdk/js/runtime builds: run make js-runtime and commit it" >&2; exit 1; }

# Python packs. packd's Python runtime is CPython 3.11.2 from Debian 12's
# source package (the orig tarball of python3.11, which `apt-get source
# python3.11` fetches, from the same pool), checked against its SHA-256,
# built for wasm32-wasi with the C packs' clang and wasi-libc and
# sdk/py/runtime (runtime.c, _packd_runtime.py, packd_sdk). Debian's
# python3.11, the same release, is the build Python: it freezes the
# standard library modules the runtime carries (freeze.py). configure's
# answers for this toolchain are recorded in config.cache (make
# py-config-cache asks them again: 3 minutes); sdk/py/runtime/pinned.h pins
# the build date, so the same sources build the same bytes. The runtime,
# gzipped, is committed (packd embeds it: make run needs only Go);
# py-runtime-check, in make test, holds it to what its sources build.
PY_TGZ     := build/py/python3.11_3.11.2.orig.tar.gz
PY_URL     := http://deb.debian.org/debian/pool/main/p/python3.11/python3.11_3.11.2.orig.tar.gz
PY_SHA256  := 2411c74bda5bbcfcddaf4531f66d1adc73f247f529aee981b029513aefdbf849
PY_SRC     := build/py/Python-3.11.2
PY_WASI    := build/py/wasi
BUILD_PY   ?= /usr/bin/python3.11
PY_CC      := $(CLANG) --target=wasm32-wasi -nostdlibinc -isystem /usr/include/wasm32-wasi
PY_CFLAGS  := -O2 -mbulk-memory -ftls-model=local-exec
# configure is run by a path relative to the build: CPython's file names
# (assertions, internal errors) are in the runtime, and must not depend on
# where the repository is.
PY_CONFIGURE = cd $(PY_WASI) && PKG_CONFIG_PATH= PKG_CONFIG_LIBDIR=/nonexistent \
	  CONFIG_SITE=../Python-3.11.2/Tools/wasm/config.site-wasm32-wasi CC="$(PY_CC)" CPP="$(PY_CC) -E" \
	  AR=llvm-ar RANLIB=llvm-ranlib CFLAGS="$(PY_CFLAGS)" ../Python-3.11.2/configure -q --cache-file=config.cache \
	  --host=wasm32-unknown-wasi --build=x86_64-pc-linux-gnu --with-build-python=$(BUILD_PY) \
	  --disable-test-modules --without-ensurepip --disable-ipv6 >configure.log 2>&1 || { cat configure.log >&2; exit 1; }
# The standard library modules the runtime carries: these and what they
# import (freeze.py leaves out what a pack cannot use in packd).
PY_STDLIB  := encodings encodings.aliases encodings.utf_8 encodings.utf_8_sig encodings.ascii encodings.latin_1 encodings.cp1252 \
	      encodings.utf_16 encodings.utf_16_le encodings.utf_16_be encodings.utf_32 encodings.utf_32_le encodings.utf_32_be \
	      encodings.idna encodings.unicode_escape encodings.raw_unicode_escape json re typing dataclasses enum \
	      functools collections datetime random secrets uuid base64 hashlib hmac traceback textwrap string copy contextlib \
	      decimal fractions statistics urllib.parse html csv difflib pprint logging
PY_RUNTIME := sdk/py/runtime/runtime.wasm.gz
# The rest of the standard library, as build-py takes from it (freeze.py).
PY_LIBRARY := sdk/py/runtime/library.json.gz
NEED_PY     = @command -v $(BUILD_PY) >/dev/null && command -v llvm-ar >/dev/null || { echo "$(BUILD_PY) or llvm-ar not found: packd's Python runtime needs Debian's python3.11 and llvm (scripts/deps installs them)" >&2; exit 1; }

$(PY_TGZ):
	@mkdir -p build/py
	curl -sSfL -o $@.part $(PY_URL)
	@echo "$(PY_SHA256)  $@.part" | sha256sum -c --quiet - || { echo "$(PY_URL) is not the CPython 3.11.2 packd is built from" >&2; rm -f $@.part; exit 1; }
	mv $@.part $@

$(PY_SRC)/configure: $(PY_TGZ)
	tar -xzf $(PY_TGZ) -C build/py
	@touch $@

$(PY_WASI)/Makefile: $(PY_SRC)/configure sdk/py/runtime/config.cache
	$(NEED_PY)
	rm -rf $(PY_WASI) && mkdir -p $(PY_WASI)
	cp sdk/py/runtime/config.cache $(PY_WASI)/config.cache
	$(PY_CONFIGURE)

$(PY_WASI)/libpython3.11.a: $(PY_WASI)/Makefile sdk/py/runtime/pinned.h
	$(MAKE) --no-print-directory -s -C $(PY_WASI) OPT="-DNDEBUG -fwrapv -w -include $(abspath sdk/py/runtime/pinned.h)" \
	  libpython3.11.a Modules/_decimal/libmpdec/libmpdec.a Modules/expat/libexpat.a >/dev/null

build/py/frozen.c build/py/library.json &: sdk/py/runtime/freeze.py sdk/py/runtime/_packd_runtime.py sdk/py/packd_sdk/__init__.py $(PY_WASI)/libpython3.11.a
	$(BUILD_PY) sdk/py/runtime/freeze.py build/py/frozen.c build/py/library.json $(PY_SRC)/Lib $(PY_WASI)/Modules/config.c $(PY_STDLIB) -- \
	  _packd_runtime=sdk/py/runtime/_packd_runtime.py packd_sdk=sdk/py/packd_sdk/__init__.py

build/py/runtime.wasm: sdk/py/runtime/runtime.c build/py/frozen.c $(PY_WASI)/libpython3.11.a
	$(PY_CC) -mexec-model=reactor $(PY_CFLAGS) -Wall -I$(PY_SRC)/Include -I$(PY_WASI) \
	  -Wl,--stack-first -Wl,-z,stack-size=1048576 -Wl,--strip-debug -o $@ sdk/py/runtime/runtime.c build/py/frozen.c \
	  $(PY_WASI)/libpython3.11.a $(PY_WASI)/Modules/_decimal/libmpdec/libmpdec.a $(PY_WASI)/Modules/expat/libexpat.a \
	  -lwasi-emulated-signal -lwasi-emulated-getpid -lwasi-emulated-process-clocks -lm

build/py/runtime.wasm.gz: build/py/runtime.wasm
	gzip -9 -n -c $< >$@

build/py/library.json.gz: build/py/library.json
	gzip -9 -n -c $< >$@

py-runtime: build/py/runtime.wasm.gz build/py/library.json.gz
	cp build/py/runtime.wasm.gz $(PY_RUNTIME)
	cp build/py/library.json.gz $(PY_LIBRARY)

py-runtime-check: build/py/runtime.wasm.gz build/py/library.json.gz
	@cmp -s build/py/runtime.wasm.gz $(PY_RUNTIME) || { echo "$(PY_RUNTIME) is not what sdk/py/runtime builds: run make py-runtime and commit it" >&2; exit 1; }
	@cmp -s build/py/library.json.gz $(PY_LIBRARY) || { echo "$(PY_LIBRARY) is not what sdk/py/runtime builds: run make py-runtime and commit it" >&2; exit 1; }

# packd_sdk's own tests, on the host's Python.
py-sdk-test:
	$(NEED_PY)
	cd sdk/py && $(BUILD_PY) -m unittest discover -s test

# configure's answers asked again (3 minutes), for a new toolchain: the
# environment's own entries are left out, so configure takes them as given.
py-config-cache: $(PY_SRC)/configure
	$(NEED_PY)
	rm -rf $(PY_WASI) && mkdir -p $(PY_WASI)
	$(PY_CONFIGURE)
	grep -v '^ac_cv_env_' $(PY_WASI)/config.cache >sdk/py/runtime/config.cache

# A TypeScript pack: esbuild bundles it with the SDK and zod (package.json,
# npm ci), and packd build-js puts the bundle into the runtime.
ESBUILD       := node_modules/.bin/esbuild
ESBUILD_FLAGS := --bundle --format=iife --platform=neutral --target=es2020 --main-fields=module,main --log-level=warning
node_modules/.package-lock.json: package.json package-lock.json
	$(NEED_NPM)
	$(NPM) ci --ignore-scripts --no-audit --no-fund --loglevel=error

TS_PACK = @mkdir -p build/js && $(ESBUILD) $(ESBUILD_FLAGS) --outfile=build/js/$(subst /,-,$@).js $(basename $@).ts && \
	  $(BIN) build-js -o $@ build/js/$(subst /,-,$@).js >/dev/null
wasm-examples/ts-%.wasm: $(BIN) node_modules/.package-lock.json sdk/js/index.js $$(wildcard wasm-examples/ts-$$(*D)/*.ts)
	$(TS_PACK)
testdata/jscanary/canary.wasm: $(BIN) node_modules/.package-lock.json sdk/js/index.js testdata/jscanary/canary.ts
	$(TS_PACK)
testdata/jsnet/net.wasm: $(BIN) node_modules/.package-lock.json sdk/js/index.js testdata/jsnet/net.ts
	$(TS_PACK)
testdata/jshostile/hostile.wasm: $(BIN) node_modules/.package-lock.json sdk/js/index.js testdata/jshostile/hostile.ts
	$(TS_PACK)

# A Python pack: packd build-py puts its sources into the Python runtime.
wasm-examples/py-%.wasm: $(BIN) $(PY_RUNTIME) $$(wildcard wasm-examples/py-$$(*D)/*.py)
	$(BIN) build-py -o $@ $(dir $@) >/dev/null
testdata/pycanary/canary.wasm testdata/pyhostile/hostile.wasm testdata/pynet/net.wasm: testdata/%.wasm: $(BIN) $(PY_RUNTIME) testdata/%.py
	$(BIN) build-py -o $@ $(dir $@) >/dev/null

# The SDK's own tests, natively with node (no packd), and a type check
# (tsc, tsconfig.json) of the SDK's types as packd's TypeScript packs use
# them: esbuild, which builds them, checks no types.
js-sdk-test: node_modules/.package-lock.json
	node --test --test-reporter=dot sdk/js/test/
	node_modules/.bin/tsc -p tsconfig.json

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
	echo "or over MCP (docs/mcp.md): http://127.0.0.1:$(PORT)/mcp with the header Authorization: Bearer $$token"; \
	echo "stop it with Ctrl-C"; \
	KINDGI_PACK_SERVICE_TOKEN=$$token PORT=$(PORT) exec $(BIN) --index wasm-examples/echo/index.json

# The Go SDK (abi/guest) is a module of its own: vetted and tested in it.
vet:
	$(GO) vet ./...
	cd abi/guest && $(GO) vet ./... && $(WASM_ENV) $(GO) vet ./...
	$(GO) vet -tags spectest ./internal/sandbox/internal/instrument
	$(WASM_ENV) $(GO) vet ./wasm-examples/... ./testdata/gocanary ./testdata/goctx ./testdata/gonet

# make test: scripts/deps installs what the tests need when it is missing
# (Debian packages, Go modules) or stops at once with the command to run;
# then every test, none of them skipped.
test:
	scripts/deps
	$(MAKE) --no-print-directory test-all

# Every test, with what scripts/deps installs already there. The modules
# build two at a time (QuickJS's 13 s compile and CPython's 80 s beside the
# Go packs').
test-all:
	$(MAKE) --no-print-directory -j2 build wasm fixtures build/js/runtime.wasm build/py/runtime.wasm.gz build/py/library.json.gz
	$(MAKE) --no-print-directory vet
	$(MAKE) --no-print-directory go-test-race
	$(MAKE) --no-print-directory go-test-cmd
	cd abi/guest && $(GO) test -race -count=1 -timeout 2m ./...
	$(MAKE) --no-print-directory c-sdk-test
	$(MAKE) --no-print-directory js-json-test
	$(MAKE) --no-print-directory js-runtime-check
	$(MAKE) --no-print-directory py-runtime-check
	$(MAKE) --no-print-directory py-sdk-test
	$(MAKE) --no-print-directory js-sdk-test
	$(MAKE) --no-print-directory image-check
	$(MAKE) --no-print-directory spectest
	$(MAKE) --no-print-directory mcp-conformance
	$(MAKE) --no-print-directory e2e

# The Go tests, two sets one after the other (side by side on 2 cores,
# each ran twice as long: cmd/packd passed its 8 minutes, and a slow-reader
# test its 20 s wait for a 3 MiB call under -race). Every package runs under the race
# detector but cmd/packd: its tests drive bin/packd as a process (not
# race-built) or run one command in-process, so the concurrency they reach
# is internal/'s, which runs under -race here; under -race they spent 150 s
# more, nearly all in wazero compiling modules in-process.
go-test-race:
	PACKD_BINARY=$(CURDIR)/$(BIN) $(GO) test -race -count=1 -timeout 8m $$($(GO) list ./... | grep -v '/cmd/packd$$')

go-test-cmd:
	PACKD_BINARY=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 8m ./cmd/packd

# The container image (Dockerfile, target prebuilt): bin/packd (static:
# CGO_ENABLED=0; the binary the black-box suite tests) and the echo pack, with podman or docker, whichever is installed.
ENGINE ?= $(shell command -v podman 2>/dev/null || command -v docker 2>/dev/null)
IMAGE  ?= packd:dev
# The roots of trust packd's TLS clients use in the image (a registry's, a
# pack's egress, OTLP): scratch has none.
CA_CERTS ?= /etc/ssl/certs/ca-certificates.crt
# The image ships a warm compilation cache for its pack (bin/image-cache,
# made by packd check with that binary, at /cache): a new node starts warm,
# read-only root or not, when its CPU has the features of the machine
# that made it (wazero's entries are per CPU; a module the cache lacks
# compiles at start).
image: $(BIN) wasm-examples/echo/echo.wasm
	@test -n "$(ENGINE)" || { echo "make image needs podman or docker (Debian: apt-get install podman)" >&2; exit 1; }
	@test -s $(CA_CERTS) || { echo "make image needs the CA certificates the image carries, $(CA_CERTS) (Debian: apt-get install ca-certificates)" >&2; exit 1; }
	cp $(CA_CERTS) bin/ca-certificates.crt
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

# The JavaScript runtime's JSON writer and reader (sdk/js/runtime/json.c)
# against QuickJS's own JSON.stringify and JS_ParseJSON, built natively.
js-json-test: $(QJS_SRC)/quickjs.c
	@mkdir -p build
	$(CLANG) -O0 -w -DCONFIG_VERSION='"2021-03-27"' -DCONFIG_BIGNUM -I$(QJS_SRC) -o build/json_test sdk/js/runtime/test/json_test.c \
	  $(QJS_SRC)/libregexp.c $(QJS_SRC)/libunicode.c $(QJS_SRC)/cutils.c $(QJS_SRC)/libbf.c -lm -lpthread
	build/json_test

# The official WebAssembly spec testsuite (wazero's converted copy) through
# the fuel pass: every module, assertion and refusal (see
# internal/sandbox/internal/instrument/spec_test.go). Uses wasm-validate when wabt
# is installed.
spectest:
	$(GO) mod download github.com/tetratelabs/wazero
	@mkdir -p build; $(GO) test -tags spectest -count=1 -timeout 5m -v -run TestSpecSuite ./internal/sandbox/internal/instrument >build/spectest.log 2>&1; \
	rc=$$?; grep -v -e '^=== RUN' -e '^    --- PASS' -e '^--- PASS' build/spectest.log; exit $$rc

# MCP's conformance suite against packd serve's /mcp (scripts/mcp-conformance;
# the scenarios packd cannot pass: testdata/mcp/conformance-baseline.yml).
mcp-conformance: $(BIN) wasm-examples/mcp-conformance/mcp-conformance.wasm node_modules/.package-lock.json
	scripts/mcp-conformance

# promtool on a real scrape of a running packd, and a real Prometheus server
# scraping it (needs Debian's prometheus package).
e2e: build wasm
	$(GO) test -tags e2e -count=1 -timeout 3m -run 'Promtool|Prometheus' ./cmd/packd

bench: build wasm fixtures
	-$(GO) run ./cmd/callbench
	$(GO) run ./cmd/mcpbench
	$(GO) run ./cmd/watchbench
	$(GO) run ./cmd/budgetload $(BIN) testdata/pyhostile/hostile.wasm
	$(GO) test -run '^$$' -bench FuelRatio -benchtime 200x -count 3 ./internal/sandbox
	$(GO) test -run '^$$' -bench 'FuelPace|DeadlineOvershoot' -benchtime 5x ./internal/sandbox
	$(GO) test -run '^$$' -bench FuelRate -benchtime 40x -count 3 ./internal/sandbox
	$(GO) test -run '^$$' -bench ResetAfterBigWrite -benchtime 20x ./internal/sandbox
	$(GO) test -run '^$$' -bench ReplayRecordsWriter -benchtime 20000x -count 3 ./internal/service
	$(GO) test -run '^$$' -bench InvokeServed -count 3 ./internal/server
	$(GO) test -run '^$$' -bench CallPooledEchoGoRecorded -count 3 ./internal/sandbox
	$(GO) test -run '^$$' -bench DecodeKeys ./internal/ojson
	$(GO) test -run '^$$' -bench InstantiateAtTheBounds ./internal/sandbox/internal/instrument
	$(GO) test -run '^$$' -bench 'Call|Baseline|Dispatch|Egress' -benchmem -count 5 ./internal/sandbox ./internal/host
	$(GO) build -o bin/startbench ./cmd/startbench
	-bin/startbench $(BIN) wasm-examples/echo/echo.wasm 1,10,50
	-bin/startbench $(BIN) wasm-examples/py-echo/echo.wasm 1,5

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
