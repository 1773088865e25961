(module
  ;; fixture: answers the bytes of its one data segment, which lies in its
  ;; second page: what an instance must hold however it was made (from the
  ;; snapshot, fresh for a call, for a snapshot taken anew), once packd
  ;; writes the data itself.
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 2)
  (data (i32.const 65600) "\"0123456789\"")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32) (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (call $response_write (i32.const 65600) (i32.const 12))
    (i32.const 0))
)
