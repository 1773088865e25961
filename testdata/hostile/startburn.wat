(module
  ;; hostile fixture: its start function burns about 10,000,000 units of
  ;; fuel (two million turns of a loop), then every call sleeps 300 ms in
  ;; poll_oneoff and answers {}: a pool's second instance, made while the
  ;; first serves a call, runs the start function again
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (global $turns (mut i32) (i32.const 0))
  (data (i32.const 0) "{\"tools\":[\"hostile.startburn\"],\"checks\":[]}")
  (data (i32.const 100) "{}")
  (start $burn)
  (func $burn
    (loop $again
      (global.set $turns (i32.add (global.get $turns) (i32.const 1)))
      (br_if $again (i32.lt_u (global.get $turns) (i32.const 2000000)))))
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 43))
    (i32.const 0))
  ;; one clock subscription at 1024: userdata 0, tag 0 (clock), id 1, timeout 300 ms
  (func (export "kindgi_call") (result i32)
    (i64.store (i32.const 1048) (i64.const 300000000))
    (drop (call $poll (i32.const 1024) (i32.const 2048) (i32.const 1) (i32.const 4096)))
    (call $response_write (i32.const 100) (i32.const 2))
    (i32.const 0)))
