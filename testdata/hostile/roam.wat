(module
  ;; fixture: writes a word on the page of memory its request names, after
  ;; looking for any such word an earlier call left on pages 1 to 511 (it
  ;; answers {"dirty":true} if it finds one). The request's first byte is
  ;; the page (1 to 255), so that a call can write a page no earlier call
  ;; wrote.
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (import "kindgi" "request_read" (func $request_read (param i32)))
  (memory (export "memory") 32)
  (data (i32.const 0) "{\"tools\":[\"hostile.roam\"],\"checks\":[]}")
  (data (i32.const 200) "{\"dirty\":false}")
  (data (i32.const 300) "{\"dirty\":true}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 38))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (local $p i32) (local $dirty i32)
    (local.set $p (i32.const 1))
    (loop $check
      (if (i32.load (i32.add (i32.mul (local.get $p) (i32.const 4096)) (i32.const 8)))
        (then (local.set $dirty (i32.const 1))))
      (br_if $check (i32.lt_u (local.tee $p (i32.add (local.get $p) (i32.const 1))) (i32.const 512))))
    (call $request_read (i32.const 1000))
    (i32.store (i32.add (i32.mul (i32.load8_u (i32.const 1000)) (i32.const 4096)) (i32.const 8)) (i32.const 0xdeadbeef))
    (if (local.get $dirty)
      (then (call $response_write (i32.const 300) (i32.const 14)))
      (else (call $response_write (i32.const 200) (i32.const 15))))
    (i32.const 0))
)
