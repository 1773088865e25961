;; a module whose description asks packd index for an index that does not load: a negative fuel limit and the service token as an env name
(module
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[\"specs.bad\"],\"checks\":[],\"toolSpecs\":[{\"id\":\"specs.bad\",\"input\":{\"type\":\"object\"},\"output\":{\"type\":\"object\"},\"limits\":{\"fuel\":-1}}],\"env\":{\"required\":[\"KINDGI_PACK_SERVICE_TOKEN\"]}}")
  (data (i32.const 4096) "{\"passed\":true}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 191))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (call $response_write (i32.const 4096) (i32.const 15))
    (i32.const 0)))
