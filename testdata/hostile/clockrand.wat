(module
  ;; fixture: what varies from one run of a call to the next. kindgi_call
  ;; reads the realtime and the monotonic clock, draws 16 random bytes,
  ;; sleeps 1 ms in poll_oneoff, reads the monotonic clock again, and
  ;; answers the 40 raw bytes it got (not JSON: for the sandbox's tapes).
  ;; The "swap" variant (clockrand2.wat) draws first.
  (import "wasi_snapshot_preview1" "clock_time_get" (func $clock (param i32 i64 i32) (result i32)))
  (import "wasi_snapshot_preview1" "random_get" (func $random (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[\"hostile.clockrand\"],\"checks\":[]}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 43))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (drop (call $clock (i32.const 0) (i64.const 1) (i32.const 200)))
    (drop (call $clock (i32.const 1) (i64.const 1) (i32.const 208)))
    (drop (call $random (i32.const 216) (i32.const 16)))
    ;; one clock subscription at 1024: userdata 0, tag 0 (clock), id 1, timeout 1 ms
    (i32.store (i32.const 1040) (i32.const 1))
    (i64.store (i32.const 1048) (i64.const 1000000))
    (drop (call $poll (i32.const 1024) (i32.const 2048) (i32.const 1) (i32.const 4096)))
    (drop (call $clock (i32.const 1) (i64.const 1) (i32.const 232)))
    (call $response_write (i32.const 200) (i32.const 40))
    (i32.const 0)))
