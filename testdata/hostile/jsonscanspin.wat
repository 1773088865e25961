(module
  ;; hostile fixture: makes its 256 MiB one string of '<' (each a byte
  ;; json_scan looks at on its own) without an end, and asks json_scan
  ;; where the value in it ends, for ever
  (import "kindgi" "json_scan" (func $json_scan (param i32 i32) (result i64)))
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 4096)
  (data (i32.const 0) "{\"tools\":[\"hostile.jsonscanspin\"],\"checks\":[]}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 46))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (memory.fill (i32.const 0) (i32.const 0x3c) (i32.const 0x10000000))
    (i32.store8 (i32.const 0) (i32.const 0x22))
    (loop $again
      (drop (call $json_scan (i32.const 0) (i32.const 0x10000000)))
      (br $again))
    (i32.const 0))
)
