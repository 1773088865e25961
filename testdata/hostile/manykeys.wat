(module
  ;; hostile fixture: answers an object of 1,100,000 keys (15.4 MB):
  ;; {"00000000":0,"00000001":0,...}
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 300)
  (data (i32.const 0) "{\"tools\":[\"hostile.manykeys\"],\"checks\":[]}")
  (data (i32.const 64) "0123456789abcdef")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 42))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (local $i i32) (local $p i32) (local $n i32)
    (i32.store8 (i32.const 1024) (i32.const 123)) ;; {
    (local.set $p (i32.const 1025))
    (loop $keys
      (i32.store8 (local.get $p) (i32.const 34)) ;; "
      (local.set $n (i32.const 0))
      (loop $digits ;; 8 hex digits of $i, most significant first
        (i32.store8 (i32.add (i32.add (local.get $p) (i32.const 1)) (local.get $n))
          (i32.load8_u (i32.add (i32.const 64)
            (i32.and (i32.shr_u (local.get $i) (i32.sub (i32.const 28) (i32.mul (local.get $n) (i32.const 4)))) (i32.const 15)))))
        (br_if $digits (i32.lt_u (local.tee $n (i32.add (local.get $n) (i32.const 1))) (i32.const 8))))
      (i32.store (i32.add (local.get $p) (i32.const 9)) (i32.const 0x2c303a22)) ;; ":0,
      (local.set $p (i32.add (local.get $p) (i32.const 13)))
      (br_if $keys (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (i32.const 1100000))))
    (i32.store8 (i32.sub (local.get $p) (i32.const 1)) (i32.const 125)) ;; }
    (call $response_write (i32.const 1024) (i32.sub (local.get $p) (i32.const 1024)))
    (i32.const 0))
)
