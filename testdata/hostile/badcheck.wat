(module
  ;; hostile fixture: a check whose result has no boolean `passed`
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[],\"checks\":[\"hostile.badcheck\"]}")
  (data (i32.const 1024) "{\"passed\":\"yes\"}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 42))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (call $response_write (i32.const 1024) (i32.const 16))
    (i32.const 0)))
