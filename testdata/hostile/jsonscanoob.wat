(module
  ;; hostile fixture: asks json_scan about a range that runs past its memory
  (import "kindgi" "json_scan" (func $json_scan (param i32 i32) (result i64)))
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[\"hostile.jsonscanoob\"],\"checks\":[]}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 45))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (drop (call $json_scan (i32.const 65000) (i32.const 1000)))
    (i32.const 0))
)
