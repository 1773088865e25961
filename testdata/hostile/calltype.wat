;; invalid as written (built with wat2wasm --no-check): call_indirect of
;; type 1 in a module with one type; the fuel pass appends a () -> ()
(module
  (type (func (result i32)))
  (table 1 funcref)
  (memory (export "memory") 1)
  (func (export "kindgi_call") (type 0)
    (call_indirect (type 1) (i32.const 0))
    (i32.const 0))
)
