(module
  ;; hostile fixture: grows its memory a page at a time until refused, then writes past the end
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (import "kindgi" "request_len" (func $request_len (result i32)))
  (import "kindgi" "request_read" (func $request_read (param i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[\"hostile.grow\"],\"checks\":[]}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 38))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (block $refused
      (loop $more
        (br_if $refused (i32.eq (memory.grow (i32.const 1)) (i32.const -1)))
        (br $more)))
    (i32.store (i32.mul (memory.size) (i32.const 65536)) (i32.const 1))
    (i32.const 0))
)
