(module
  ;; hostile fixture: its _initialize loops for ever, so the call that
  ;; takes its snapshot holds the snapshot for as long as its limits allow
  (memory (export "memory") 1)
  (func (export "_initialize") (loop $forever (br $forever)))
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32) (i32.const 0))
  (func (export "kindgi_call") (result i32) (i32.const 0))
)
