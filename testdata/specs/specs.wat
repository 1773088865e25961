;; a module (as any language may write one) whose description says every index field packd index writes: a tool's version, description, schemas, limits, network, effects, mutating, needs, needsSpec, sandbox and spec; a check's guardrail id, kind, action, severity, config schema, limits, name, scope, config and sandbox; the env names it reads
(module
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[\"specs.fetch\"],\"checks\":[\"specs.checks.ok\"],\"toolSpecs\":[{\"id\":\"specs.fetch\",\"version\":\"2.0.0\",\"description\":\"Fetches a thing.\",\"input\":{\"type\":\"object\"},\"output\":{\"type\":\"object\"},\"limits\":{\"fuel\":5000000,\"memMB\":16},\"network\":{\"kind\":\"allowlist\",\"hosts\":[\"api.example.com\"]},\"effects\":[{\"kind\":\"reads\",\"resource\":\"db:things\"}],\"mutating\":false,\"needs\":[{\"name\":\"tenant\"}],\"needsSpec\":{\"env\":{\"REGION\":{\"type\":\"string\",\"default\":\"eu\"}}},\"sandbox\":\"strict\",\"spec\":{\"kind\":\"http\",\"method\":\"GET\",\"urlTemplate\":\"https://api.example.com/things/{id}\"}}],\"checkSpecs\":[{\"id\":\"specs.checks.ok\",\"guardrail\":\"specs.ok\",\"kind\":\"zero-llm\",\"action\":{\"on-violation\":\"log-only\"},\"severity\":\"warning\",\"configSchema\":{\"type\":\"object\"},\"limits\":{\"fuel\":1000000},\"name\":\"It is ok\",\"scope\":{\"when\":\"always\"},\"config\":{\"strict\":true},\"sandbox\":\"strict\"}],\"env\":{\"required\":[\"SPECS_URL\"],\"optional\":[\"SPECS_DEBUG\",\"SPECS_URL\"]}}")
  (data (i32.const 4096) "{\"passed\":true}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 917))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (call $response_write (i32.const 4096) (i32.const 15))
    (i32.const 0)))
