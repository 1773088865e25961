(module
  ;; hostile fixture: grows its memory by 1 GiB, fills all of it with one
  ;; memory.fill (every 4 KiB page a first touch), then copies half of it over
  ;; the other half, overlapping, forever
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[\"hostile.freshfill\"],\"checks\":[]}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 43))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (if (i32.eq (memory.grow (i32.const 16384)) (i32.const -1)) (then (unreachable)))
    (memory.fill (i32.const 0) (i32.const 0xff) (i32.mul (memory.size) (i32.const 65536)))
    (loop $again
      (memory.copy (i32.const 1) (i32.const 0) (i32.const 0x20000000))
      (br $again))
    (i32.const 0)))
