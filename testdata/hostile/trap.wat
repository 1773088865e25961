(module
  ;; hostile fixture: traps with unreachable
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (import "kindgi" "request_len" (func $request_len (result i32)))
  (import "kindgi" "request_read" (func $request_read (param i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[\"hostile.trap\"],\"checks\":[]}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 38))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (unreachable))
)
