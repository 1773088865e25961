(module
  ;; fixture: two exports of one signature that answer differently: a cache
  ;; entry whose function offsets were swapped runs the other one
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[\"hostile.twins\"],\"checks\":[]}")
  (data (i32.const 100) "\"first\"")
  (data (i32.const 200) "\"second\"")
  (func $first (export "kindgi_call") (result i32)
    (call $response_write (i32.const 100) (i32.const 7))
    (i32.const 0))
  (func $second (export "second") (result i32)
    (call $response_write (i32.const 200) (i32.const 8))
    (i32.const 0))
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 39))
    (i32.const 0)))
