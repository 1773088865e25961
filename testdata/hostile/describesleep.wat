(module
  ;; hostile fixture: kindgi_describe sleeps in poll_oneoff for an hour
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  ;; one clock subscription at 1024: userdata 0, tag 0 (clock), id 1, timeout 3600 s
  (func (export "kindgi_describe") (result i32)
    (i64.store (i32.const 1048) (i64.const 3600000000000))
    (drop (call $poll (i32.const 1024) (i32.const 2048) (i32.const 1) (i32.const 4096)))
    (i32.const 0))
  (func (export "kindgi_call") (result i32) (i32.const 0))
)
