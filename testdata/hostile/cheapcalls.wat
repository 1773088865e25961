(module
  ;; hostile fixture: calls the cheapest host function (request_len) for
  ;; ever, one call after another with nothing between: packd reads the
  ;; clock only every 65,536 units of host work (1,024 of these calls)
  (import "kindgi" "request_len" (func $request_len (result i32)))
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[\"hostile.cheapcalls\"],\"checks\":[]}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 44))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (loop $forever
      (drop (call $request_len))
      (br $forever))
    (i32.const 0))
)
