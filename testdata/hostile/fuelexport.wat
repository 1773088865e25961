;; invalid as written (built with wat2wasm --no-check): exports global 0 of
;; a module without globals, which the fuel pass's counter would be
(module
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 1)
  (export "g" (global 0))
  (data (i32.const 0) "{\"tools\":[\"hostile.fuelexport\"],\"checks\":[]}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 44))
    (i32.const 0))
  (func (export "kindgi_call") (result i32) (i32.const 0))
)
