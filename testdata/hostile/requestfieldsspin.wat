(module
  ;; hostile fixture: asks request_fields where the fields of its (large)
  ;; request lie, again and again: only the call's deadline stops it
  (import "kindgi" "request_fields" (func $request_fields (param i32 i32) (result i32)))
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[\"hostile.requestfieldsspin\"],\"checks\":[]}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 51))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (loop $again
      (drop (call $request_fields (i32.const 1024) (i32.const 17)))
      (br $again))
    (i32.const 0))
)
