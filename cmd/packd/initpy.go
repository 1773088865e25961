package main

import (
	"fmt"
	"io"
	"path/filepath"

	pysdk "github.com/kindgi/packd/sdk/py"
)

// initPy writes a Python pack with the SDK beside it (packd_sdk/, for its
// tests on the author's Python; build-py leaves it out, the runtime has
// its own), builds its module (packd's Python runtime is in packd: no
// other tool is needed) and writes its index.
func initPy(dir, pack string, files map[string]string, stdout, stderr io.Writer) int {
	if !writeWithSDK(dir, pack, "Python", files, pysdk.SDK, ".", nil, stderr) {
		return exitError
	}
	if err := buildPy(dir, filepath.Join(dir, wasmName(pack)+".wasm"), stderr); err != nil {
		fmt.Fprintf(stderr, "packd init: %v\n", err)
		return exitError
	}
	return writeIndex(dir, pack, stdout, stderr, "make test")
}

// pyPackFiles are a new Python pack's files.
var pyPackFiles = map[string]string{
	"tools/__init__.py": "",
	"tools/greet.py": `"""The {{.Pack}} pack's tool. Each define_tool registers with packd when the
module loads; packd index writes index.json from them, and packd validates
every call against the schemas."""

from packd_sdk import define_tool


def greet(input, ctx):
    return {"greeting": "Hello, %s!" % input["name"]}


define_tool(
    id="{{.Pack}}.greet",
    version="1.0.0",
    description="Greets someone.",
    input={
        "type": "object",
        "properties": {"name": {"type": "string", "minLength": 1, "description": "Who to greet."}},
        "required": ["name"],
        "additionalProperties": False,
    },
    output={"type": "object", "properties": {"greeting": {"type": "string"}}, "required": ["greeting"]},
    handler=greet,
)
`,
	"guardrails/__init__.py": "",
	"guardrails/not_empty.py": `"""The {{.Pack}} pack's guardrail check: it answers {"passed": ...} for a
run's trace."""

from packd_sdk import define_check


def not_empty(config, trace):
    text = (trace.get("output") or "").strip()
    if len(text) >= config.get("minLength", 1):
        return {"passed": True}
    return {"passed": False, "reason": "too short"}


define_check(
    id="{{.Pack}}.checks.not-empty",
    config_schema={"type": "object", "properties": {"minLength": {"type": "integer", "minimum": 0, "default": 1}}},
    handler=not_empty,
)
`,
	"tests/__init__.py": "",
	"tests/test_pack.py": `"""The pack's handlers, run on your own Python (make test): outside packd,
define_tool and define_check only record the definitions."""

import unittest

from guardrails.not_empty import not_empty
from tools.greet import greet


class PackTest(unittest.TestCase):
    def test_greet_greets(self):
        self.assertEqual(greet({"name": "Ada"}, {}), {"greeting": "Hello, Ada!"})

    def test_not_empty_refuses_an_empty_answer(self):
        self.assertEqual(not_empty({}, {"output": "  "}), {"passed": False, "reason": "too short"})
        self.assertEqual(not_empty({}, {"output": "hi"}), {"passed": True})
`,
	"Makefile": `# make: build the pack's module (packd build-py: its .py files in packd's
# Python runtime, CPython 3.11) and write index.json; make test: its tests
# on your Python, then every recorded call in records/ replayed on the
# module (packd replay: the same output and fuel). make record records the
# example call anew; a call recorded by packd serve --record DIR joins
# records/ the same way. Commit records/: each record is a test. The module
# is not committed: make test builds it first. PACKD is packd's path when
# it is not on PATH (make PACKD=/path/to/packd); PYTHON, your Python 3.11.
PACKD  ?= packd
PYTHON ?= python3

all: build index

build:
	$(PACKD) build-py -o {{.Name}}.wasm .

index: build
	$(PACKD) index --index index.json {{.Name}}.wasm

record: index
	rm -rf records/example
	$(PACKD) invoke --index index.json --tool {{.Pack}}.greet --input '{"name":"Ada"}' --record records/example

test: index
	$(PYTHON) -m unittest discover -s tests -t .
	$(PACKD) replay --index index.json records

.PHONY: all build index record test
`,
	".gitignore": "*.wasm\n__pycache__/\n",
}
