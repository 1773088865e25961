(module
  ;; fixture: its start function copies its data segment elsewhere, and
  ;; its call answers the copy: the start function runs inside
  ;; instantiation, after the data is written, so packd leaves such a
  ;; module's data to wazero.
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 2)
  (data (i32.const 65600) "\"0123456789\"")
  (func $start (memory.copy (i32.const 200) (i32.const 65600) (i32.const 12)))
  (start $start)
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32) (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (call $response_write (i32.const 200) (i32.const 12))
    (i32.const 0))
)
