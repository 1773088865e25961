(module
  ;; hostile fixture: kindgi_describe loops for ever
  (memory (export "memory") 1)
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (loop $forever (br $forever))
    (i32.const 0))
  (func (export "kindgi_call") (result i32) (i32.const 0))
)
