(module
  ;; hostile fixture: imports a kindgi function packd does not provide
  (import "kindgi" "http_get" (func (param i32)))
  (memory (export "memory") 1)
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32) (i32.const 0))
  (func (export "kindgi_call") (result i32) (i32.const 0)))
