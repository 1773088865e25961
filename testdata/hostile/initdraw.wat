(module
  ;; hostile fixture: _initialize draws 2 MiB of random bytes, so its
  ;; snapshot's tape is 2 MiB; kindgi_call answers the first 8 of them.
  ;; A record carries its snapshot's tape: the per-call bound counts it.
  (import "wasi_snapshot_preview1" "random_get" (func $random (param i32 i32) (result i32)))
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 33)
  (data (i32.const 0) "{\"tools\":[\"hostile.initdraw\"],\"checks\":[]}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 42))
    (i32.const 0))
  (func (export "_initialize")
    (drop (call $random (i32.const 65536) (i32.const 2097152))))
  (func (export "kindgi_call") (result i32)
    (call $response_write (i32.const 65536) (i32.const 8))
    (i32.const 0)))
