(module
  ;; fixture: memory-hungry but well-behaved: grows its memory by 192 MiB,
  ;; touches every 4 KiB page of it, holds it for 1 s, answers {} (throws
  ;; when the grow is refused)
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[\"hostile.hog\"],\"checks\":[]}")
  (data (i32.const 100) "{}")
  (data (i32.const 200) "{\"name\":\"Error\",\"message\":\"out of memory\",\"stack\":\"\"}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 37))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (local $p i32)
    (if (i32.eq (memory.grow (i32.const 3072)) (i32.const -1))
      (then
        (call $response_write (i32.const 200) (i32.const 53))
        (return (i32.const 1))))
    (local.set $p (i32.const 65536))
    (loop $touch
      (i32.store8 (local.get $p) (i32.const 1))
      (br_if $touch (i32.lt_u (local.tee $p (i32.add (local.get $p) (i32.const 4096))) (i32.const 0xc010000))))
    ;; one clock subscription at 1024: 1 s
    (i64.store (i32.const 1048) (i64.const 1000000000))
    (drop (call $poll (i32.const 1024) (i32.const 2048) (i32.const 1) (i32.const 4096)))
    (call $response_write (i32.const 100) (i32.const 2))
    (i32.const 0))
)
