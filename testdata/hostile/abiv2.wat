(module
  ;; hostile fixture: declares guest ABI version 2, which packd does not serve
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[\"hostile.abiv2\"],\"checks\":[]}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 2))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 39))
    (i32.const 0))
  (func (export "kindgi_call") (result i32) (i32.const 2))
)
