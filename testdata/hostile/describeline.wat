(module
  ;; fixture: kindgi_describe burns fuel in a loop (10,000 rounds), says
  ;; "described" on stderr, and answers that it serves
  ;; hostile.describeline: what a description kept by the cache must give
  ;; back (answer, line) without running it, and what a lower load fuel
  ;; must still refuse.
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[\"hostile.describeline\"],\"checks\":[]}")
  (data (i32.const 100) "described\n")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (local $i i32)
    (loop $burn
      (br_if $burn (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (i32.const 10000))))
    (i32.store (i32.const 200) (i32.const 100))
    (i32.store (i32.const 204) (i32.const 10))
    (drop (call $fd_write (i32.const 2) (i32.const 200) (i32.const 1) (i32.const 208)))
    (call $response_write (i32.const 0) (i32.const 46))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (call $response_write (i32.const 0) (i32.const 2))
    (i32.const 0))
)
