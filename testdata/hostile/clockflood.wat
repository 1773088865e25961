(module
  ;; hostile fixture: a million clock reads in one call, each 8 bytes on a
  ;; tape: a recording keeps a bounded number of them, not a bound of
  ;; bytes' worth of tiny answers.
  (import "wasi_snapshot_preview1" "clock_time_get" (func $clock (param i32 i64 i32) (result i32)))
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[\"hostile.clockflood\"],\"checks\":[]}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 44))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (local $i i32)
    (loop $again
      (drop (call $clock (i32.const 1) (i64.const 1) (i32.const 200)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $again (i32.lt_u (local.get $i) (i32.const 1000000))))
    (call $response_write (i32.const 200) (i32.const 8))
    (i32.const 0)))
