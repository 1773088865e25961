(module
  ;; fixture: a slow call that ends well. It says "slow call began" on
  ;; stderr, sleeps 3 s in poll_oneoff and answers {"slept":3}: a call
  ;; still in flight when the pack is reloaded.
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[\"hostile.slow\"],\"checks\":[]}")
  (data (i32.const 100) "slow call began\n")
  (data (i32.const 150) "{\"slept\":3}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 38))
    (i32.const 0))
  ;; one clock subscription at 1024: userdata 0, tag 0 (clock), id 1, timeout 3 s
  (func (export "kindgi_call") (result i32)
    (i32.store (i32.const 200) (i32.const 100))
    (i32.store (i32.const 204) (i32.const 16))
    (drop (call $fd_write (i32.const 2) (i32.const 200) (i32.const 1) (i32.const 208)))
    (i64.store (i32.const 1048) (i64.const 3000000000))
    (drop (call $poll (i32.const 1024) (i32.const 2048) (i32.const 1) (i32.const 4096)))
    (call $response_write (i32.const 150) (i32.const 11))
    (i32.const 0))
)
