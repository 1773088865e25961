(module
  ;; hostile fixture: imports kindgi.request_len with the wrong type
  (import "kindgi" "request_len" (func (result i64)))
  (memory (export "memory") 1)
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32) (i32.const 0))
  (func (export "kindgi_call") (result i32) (i32.const 0)))
