;; invalid as written (built with wat2wasm --no-check): reads local 0 of a
;; function without params or locals, where the fuel pass puts its own
;; local for memory.fill's length
(module
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[\"hostile.localtmp\"],\"checks\":[]}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 42))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (memory.fill (i32.const 0) (i32.const 0) (i32.const 8))
    (local.get 0))
)
