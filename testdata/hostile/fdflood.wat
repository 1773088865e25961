(module
  ;; hostile fixture: fd_write of 1,000 iovecs over 32 MiB to stdout, for ever
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 513)
  (data (i32.const 0) "{\"tools\":[\"hostile.fdflood\"],\"checks\":[]}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 41))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (local $i i32)
    ;; iovec i at 32 MiB + 8i: {i * 32768, 32768}
    (loop $vecs
      (i32.store (i32.add (i32.const 0x2000000) (i32.mul (local.get $i) (i32.const 8)))
        (i32.mul (local.get $i) (i32.const 32768)))
      (i32.store (i32.add (i32.const 0x2000004) (i32.mul (local.get $i) (i32.const 8)))
        (i32.const 32768))
      (br_if $vecs (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (i32.const 1000))))
    (loop $forever
      (drop (call $fd_write (i32.const 1) (i32.const 0x2000000) (i32.const 1000) (i32.const 0x2010000)))
      (br $forever))
    (i32.const 0))
)
