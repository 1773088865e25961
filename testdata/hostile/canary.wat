(module
  ;; fixture: an isolation canary. Each call first looks for what an
  ;; earlier call wrote (its global, a word on each of its 32 pages), answers
  ;; {"dirty":true} if it finds any, then writes it all. The request's first
  ;; byte says how the call ends after writing: o(k) answers, t(rap) traps,
  ;; e(xit) calls proc_exit, s(pin) loops until out of fuel or its deadline,
  ;; g(row) grows the memory a page, finds it dirty unless it reads as
  ;; zeros, writes it and answers, b(ig) answers with all of its memory
  ;; (2 MiB), r(ead) loads a word past its 32 pages (a trap, unless a grown
  ;; memory was cut back badly). A memory that is not its first 32 pages is dirty too: a
  ;; grown instance must come back at its snapshot's size.
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (import "kindgi" "request_len" (func $request_len (result i32)))
  (import "kindgi" "request_read" (func $request_read (param i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 32)
  (global $g (mut i32) (i32.const 0))
  (data (i32.const 0) "{\"tools\":[\"hostile.canary\"],\"checks\":[]}")
  (data (i32.const 200) "{\"dirty\":false}")
  (data (i32.const 300) "{\"dirty\":true}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 40))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (local $p i32) (local $dirty i32) (local $how i32)
    (local.set $dirty (i32.or (global.get $g) (i32.ne (memory.size) (i32.const 32))))
    (loop $check
      (if (i32.load (i32.add (i32.mul (local.get $p) (i32.const 65536)) (i32.const 4096)))
        (then (local.set $dirty (i32.const 1))))
      (br_if $check (i32.lt_u (local.tee $p (i32.add (local.get $p) (i32.const 1))) (i32.const 32))))
    (global.set $g (i32.const 1))
    (local.set $p (i32.const 0))
    (loop $write
      (i32.store (i32.add (i32.mul (local.get $p) (i32.const 65536)) (i32.const 4096)) (i32.const 0xdeadbeef))
      (br_if $write (i32.lt_u (local.tee $p (i32.add (local.get $p) (i32.const 1))) (i32.const 32))))
    (call $request_read (i32.const 204800))
    (local.set $how (i32.load8_u (i32.const 204800)))
    (if (i32.eq (local.get $how) (i32.const 116)) (then unreachable))                ;; t
    (if (i32.eq (local.get $how) (i32.const 101)) (then (call $proc_exit (i32.const 3)))) ;; e
    (if (i32.eq (local.get $how) (i32.const 115)) (then (loop $spin (br $spin))))     ;; s
    (if (i32.eq (local.get $how) (i32.const 114)) (then (drop (i32.load (i32.const 2101248))))) ;; r
    (if (i32.eq (local.get $how) (i32.const 103)) ;; g
      (then
        (drop (memory.grow (i32.const 1)))
        (if (i32.or (i32.load (i32.const 2101248)) (i32.load (i32.const 2162684))) ;; page 32, at 4096 and its last word
          (then (local.set $dirty (i32.const 1))))
        (i32.store (i32.const 2101248) (i32.const 0xdeadbeef))
        (i32.store (i32.const 2162684) (i32.const 0xdeadbeef))))
    (if (i32.eq (local.get $how) (i32.const 98)) (then (call $response_write (i32.const 0) (i32.const 2097152)))) ;; b
    (if (local.get $dirty)
      (then (call $response_write (i32.const 300) (i32.const 14)))
      (else (call $response_write (i32.const 200) (i32.const 15))))
    (i32.const 0))
)
