(module
  ;; hostile fixture: its start function loops for ever
  (memory (export "memory") 1)
  (start $spin)
  (func $spin (loop $forever (br $forever)))
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32) (i32.const 0))
  (func (export "kindgi_call") (result i32) (i32.const 0))
)
