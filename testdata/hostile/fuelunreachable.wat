;; invalid as written (built with wat2wasm --no-check): reads global 0 of a
;; module without globals in unreachable code, where the stack is polymorphic
(module
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[\"hostile.fuelunreachable\"],\"checks\":[]}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 49))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    unreachable
    global.get 0
    drop
    i32.const 0)
)
