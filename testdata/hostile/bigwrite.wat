(module
  ;; fixture: a request longer than 8 bytes makes the call write 4 MiB of
  ;; its 6.25 MiB memory; a shorter one writes one byte; both answer {}
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (import "kindgi" "request_len" (func $request_len (result i32)))
  (memory (export "memory") 100)
  (data (i32.const 0) "{\"tools\":[\"hostile.bigwrite\"],\"checks\":[]}")
  (data (i32.const 100) "{}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 42))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (if (i32.gt_u (call $request_len) (i32.const 8))
      (then (memory.fill (i32.const 0x100000) (i32.const 7) (i32.const 0x400000)))
      (else (i32.store8 (i32.const 200) (i32.const 1))))
    (call $response_write (i32.const 100) (i32.const 2))
    (i32.const 0)))
