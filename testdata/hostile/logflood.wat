(module
  ;; hostile fixture: logs 32 MiB without a newline, for ever
  (import "kindgi" "log" (func $log (param i32 i32 i32)))
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 512)
  (data (i32.const 0) "{\"tools\":[\"hostile.logflood\"],\"checks\":[]}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 42))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (memory.fill (i32.const 64) (i32.const 120) (i32.const 0x1ffffc0))
    (loop $forever
      (call $log (i32.const 1) (i32.const 0) (i32.const 0x2000000))
      (br $forever))
    (i32.const 0))
)
