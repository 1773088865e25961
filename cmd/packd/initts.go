package main

import (
	"fmt"
	"io"
	"os/exec"
	"path/filepath"

	jssdk "github.com/kindgi/packd/sdk/js"
)

// The versions a new TypeScript pack pins (the ones packd's own tests
// build with: package.json at the repository's root).
const (
	esbuildVersion    = "0.28.2"
	zodVersion        = "4.6.7"
	typescriptVersion = "5.9.3"
	nodeTypesVersion  = "22.20.7"
)

// initTS writes a TypeScript pack with the SDK beside it (packd-sdk/),
// installs its npm packages when npm is installed, builds its module
// (esbuild, then build-js) and writes its index.
func initTS(dir, pack string, files map[string]string, stdout, stderr io.Writer) int {
	if !writeWithSDK(dir, pack, "TypeScript", files, jssdk.SDK, "packd-sdk", nil, stderr) {
		return exitError
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		fmt.Fprintln(stderr, "packd init: npm is not installed (Debian: apt-get install nodejs npm): then run npm install and make")
		return exitOK
	}
	install := exec.Command(npm, "install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error")
	install.Dir, install.Stdout, install.Stderr = dir, stderr, stderr
	if err := install.Run(); err != nil {
		fmt.Fprintf(stderr, "packd init: npm install (in %s): %v\n", dir, err)
		return exitError
	}
	name := wasmName(pack)
	bundle := filepath.Join("build", "pack.js")
	// Its own esbuild, named by an absolute path: the command runs in dir.
	esbuild, err := filepath.Abs(filepath.Join(dir, "node_modules", ".bin", "esbuild"))
	if err != nil {
		fmt.Fprintf(stderr, "packd init: %v\n", err)
		return exitError
	}
	build := exec.Command(esbuild, append([]string{"src/pack.ts"}, esbuildFlags(bundle)...)...)
	build.Dir, build.Stdout, build.Stderr = dir, stderr, stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(stderr, "packd init: bundling the pack (in %s: make build): %v\n", dir, err)
		return exitError
	}
	if err := buildJS(filepath.Join(dir, bundle), filepath.Join(dir, name+".wasm"), dir); err != nil {
		fmt.Fprintf(stderr, "packd init: %v\n", err)
		return exitError
	}
	return writeIndex(dir, pack, stdout, stderr, "make test")
}

// esbuildFlags bundle a pack into one script for packd build-js: every
// import inlined, as one function run at load, in the JavaScript QuickJS
// runs (ES2020; esbuild lowers what is newer), with its source map, which
// build-js turns into the module's line table.
func esbuildFlags(out string) []string {
	return []string{"--bundle", "--format=iife", "--platform=neutral", "--target=es2020", "--main-fields=module,main", "--sourcemap", "--log-level=warning", "--outfile=" + out}
}

// tsPackFiles are a new TypeScript pack's files.
var tsPackFiles = map[string]string{
	"package.json": `{
  "name": "{{.Pack}}",
  "version": "0.1.0",
  "private": true,
  "type": "module",
  "scripts": {
    "build": "make build",
    "test": "make test"
  },
  "dependencies": {
    "@kindgi/sdk": "file:packd-sdk",
    "@packd/sdk": "file:packd-sdk",
    "zod": "` + zodVersion + `"
  },
  "devDependencies": {
    "@types/node": "` + nodeTypesVersion + `",
    "esbuild": "` + esbuildVersion + `",
    "typescript": "` + typescriptVersion + `"
  }
}
`,
	"tsconfig.json": `{
  "compilerOptions": {
    "target": "es2020",
    "module": "esnext",
    "moduleResolution": "bundler",
    "strict": true,
    "noEmit": true,
    "skipLibCheck": true,
    "types": []
  },
  "include": ["src", "packd-sdk/globals.d.ts"]
}
`,
	"test/tsconfig.json": `{
  "extends": "../tsconfig.json",
  "compilerOptions": {
    "types": ["node"]
  },
  "include": ["../src", "."]
}
`,
	"src/pack.ts": `// The {{.Pack}} pack: its tools and checks, served by packd. Each
// defineTool and defineCheck registers with packd when the module loads;
// packd index writes index.json from them (zod schemas become JSON
// Schema), and packd validates every call against it.
import { defineCheck, defineTool } from "@packd/sdk";
import { z } from "zod";

export const greet = defineTool({
  id: "{{.Pack}}.greet",
  version: "1.0.0",
  description: "Greets someone.",
  input: z.object({ name: z.string().min(1).describe("Who to greet.") }),
  output: z.object({ greeting: z.string() }),
  handler: async ({ name }, ctx) => {
    ctx.log?.info("greeting", { name });
    return { greeting: ` + "`Hello, ${name}!`" + ` };
  },
});

export const notEmpty = defineCheck({
  id: "{{.Pack}}.checks.not-empty",
  configSchema: z.object({ minLength: z.number().int().min(0).default(1) }),
  evaluate: async (config, trace) => {
    const text = (trace.output ?? "").trim();
    return text.length >= config.minLength ? { passed: true } : { passed: false, reason: "too short" };
  },
});
`,
	"test/pack.test.ts": `// The pack's handlers, run natively with node (make test): outside packd,
// defineTool and defineCheck only build the definitions.
import assert from "node:assert/strict";
import { test } from "node:test";
import { testContext, type RunTrace } from "@packd/sdk";
import { greet, notEmpty } from "../src/pack.js";

// A run trace whose answer is output.
const answered = (output: string): RunTrace => ({
  runId: "run-test",
  tenantId: "t-test",
  output,
  toolCalls: [],
  toolResults: [],
  modelCalls: [],
  mode: "ci",
});

test("greet greets", async () => {
  assert.equal(greet.kind, "ok");
  if (greet.kind !== "ok") return;
  assert.deepEqual(await greet.value.handler({ name: "Ada" }, testContext()), { greeting: "Hello, Ada!" });
});

test("not-empty refuses an empty answer", async () => {
  assert.deepEqual(await notEmpty.evaluate({}, answered("  ")), { passed: false, reason: "too short" });
  assert.deepEqual(await notEmpty.evaluate({}, answered("hi")), { passed: true });
});
`,
	"Makefile": `# make: bundle the pack (esbuild), build its module (packd build-js) and
# write index.json; make test: its tests, natively with node, then every
# recorded call in records/ replayed on the module (packd replay: the same
# output and fuel). make record records the example call anew; a call
# recorded by packd serve --record DIR joins records/ the same way. Commit
# records/: each record is a test. A clone lacks the module and the npm
# packages (neither is committed): make and make test install the packages
# (npm install, as package-lock.json pins them) and build the module first.
# PACKD is packd's path when it is not on PATH (make PACKD=/path/to/packd).
# A build type-checks first (tsc): the pack's sources as packd runs them
# (its globals: packd-sdk/globals.d.ts), its tests as node runs them.
PACKD   ?= packd
ESBUILD := node_modules/.bin/esbuild
TSC     := node_modules/.bin/tsc

all: build index

node_modules/.package-lock.json: package.json
	npm install --prefer-offline --no-audit --no-fund --loglevel=error

typecheck: node_modules/.package-lock.json
	$(TSC) -p tsconfig.json
	$(TSC) -p test/tsconfig.json

build: typecheck
	$(ESBUILD) src/pack.ts --bundle --format=iife --platform=neutral --target=es2020 --main-fields=module,main --sourcemap --log-level=warning --outfile=build/pack.js
	$(PACKD) build-js -o {{.Name}}.wasm build/pack.js

index: build
	$(PACKD) index --index index.json {{.Name}}.wasm

record: index
	rm -rf records/example
	$(PACKD) invoke --index index.json --tool {{.Pack}}.greet --input '{"name":"Ada"}' --record records/example

test: index
	$(ESBUILD) test/pack.test.ts --bundle --platform=node --format=esm --packages=external --log-level=warning --outfile=build/pack.test.mjs
	node --test build/pack.test.mjs
	$(PACKD) replay --index index.json records

.PHONY: all typecheck build index record test
`,
	".gitignore": "node_modules/\nbuild/\n*.wasm\n",
}
