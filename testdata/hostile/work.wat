(module
  ;; fixture: a deterministic workload (a loop, a recursion, memory.fill and
  ;; memory.grow), for fuel accounting; answers {"ok":true}
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[\"hostile.work\"],\"checks\":[]}")
  (data (i32.const 1024) "{\"ok\":true}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 38))
    (i32.const 0))
  (func $fib (param $n i32) (result i32)
    (if (result i32) (i32.lt_u (local.get $n) (i32.const 2))
      (then (local.get $n))
      (else (i32.add
        (call $fib (i32.sub (local.get $n) (i32.const 1)))
        (call $fib (i32.sub (local.get $n) (i32.const 2)))))))
  (func (export "kindgi_call") (result i32)
    (local $i i32)
    (local.set $i (i32.const 100000))
    (loop $l
      (i32.store (i32.const 4096) (i32.add (i32.load (i32.const 4096)) (local.get $i)))
      (br_if $l (local.tee $i (i32.sub (local.get $i) (i32.const 1)))))
    (drop (call $fib (i32.const 15)))
    (memory.fill (i32.const 8192) (i32.const 1) (i32.const 40000))
    (drop (memory.grow (i32.const 2)))
    (call $response_write (i32.const 1024) (i32.const 11))
    (i32.const 0)))
