(module
  ;; fixture: a call writes one byte to each of N 4 KiB pages from 1 MiB
  ;; on, N being its request's length less 8 (at most 16,384: 64 MiB),
  ;; and answers {}; for the cost of a call against the pages it writes
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (import "kindgi" "request_len" (func $request_len (result i32)))
  (memory (export "memory") 1100)
  (data (i32.const 0) "{\"tools\":[\"hostile.writepages\"],\"checks\":[]}")
  (data (i32.const 100) "{}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 44))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (local $n i32) (local $p i32)
    (local.set $n (i32.sub (call $request_len) (i32.const 8)))
    (if (i32.gt_s (local.get $n) (i32.const 16384)) (then (local.set $n (i32.const 16384))))
    (local.set $p (i32.const 0x100000))
    (block $done
      (loop $write
        (br_if $done (i32.le_s (local.get $n) (i32.const 0)))
        (i32.store8 (local.get $p) (i32.const 1))
        (local.set $p (i32.add (local.get $p) (i32.const 4096)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $write)))
    (call $response_write (i32.const 100) (i32.const 2))
    (i32.const 0)))
