(module
  ;; hostile fixture: fills the whole of its 16 MiB memory with memory.fill, in a loop
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 256)
  (data (i32.const 0) "{\"tools\":[\"hostile.fill\"],\"checks\":[]}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 38))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (loop $again
      (memory.fill (i32.const 0) (i32.const 0) (i32.mul (memory.size) (i32.const 65536)))
      (br $again))
    (i32.const 0)))
