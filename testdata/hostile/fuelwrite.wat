;; invalid as written (built with wat2wasm --no-check): a module without
;; globals sets global 0 in a loop, which the fuel pass's counter would be
(module
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[\"hostile.fuelwrite\"],\"checks\":[]}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 43))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (loop $forever
      (global.set 0 (i64.const 0x7fffffffffffffff))
      (br $forever))
    (i32.const 0))
)
