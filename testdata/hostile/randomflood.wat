(module
  ;; hostile fixture: random_get of its whole 64 MiB memory, for ever
  (import "wasi_snapshot_preview1" "random_get" (func $random_get (param i32 i32) (result i32)))
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 1024)
  (data (i32.const 0) "{\"tools\":[\"hostile.randomflood\"],\"checks\":[]}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 45))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (loop $forever
      (drop (call $random_get (i32.const 0) (i32.mul (memory.size) (i32.const 65536))))
      (br $forever))
    (i32.const 0))
)
