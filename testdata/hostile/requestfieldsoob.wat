(module
  ;; hostile fixture: asks request_fields to write its fields past its memory
  (import "kindgi" "request_fields" (func $request_fields (param i32 i32) (result i32)))
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[\"hostile.requestfieldsoob\"],\"checks\":[]}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 50))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (drop (call $request_fields (i32.const 65436) (i32.const 17)))
    (i32.const 0))
)
