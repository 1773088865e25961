(module
  ;; fixture: Go's shape of code, one loop around a br_table that jumps to
  ;; the end of one of two blocks. The small case (a few instructions) runs
  ;; 1,000 times and answers {}; the big one (1,000 nops) never runs. Fuel
  ;; that charges what runs charges the small case; charging the loop's
  ;; whole body at its header charged the big one at every iteration too.
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[\"hostile.dispatch\"],\"checks\":[]}")
  (data (i32.const 100) "{}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 42))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (local $n i32) (local $case i32)
    (loop $next
      (block $big
        (block $small
          (br_table $small $big (local.get $case)))
        ;; the small case
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (br_if $next (i32.lt_u (local.get $n) (i32.const 1000)))
        (call $response_write (i32.const 100) (i32.const 2))
        (return (i32.const 0)))
      ;; the big case
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      nop nop nop nop nop nop nop nop nop nop
      (br $next))
    (i32.const 0)))
