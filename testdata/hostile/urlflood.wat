(module
  ;; hostile fixture: outbound requests with 60 KiB URLs to a host no
  ;; allowlist has (each refused at once), so that only what a tape keeps
  ;; of the request's detail could grow: _initialize makes 150 of them
  ;; (the snapshot's tape), kindgi_call as many as its request is long,
  ;; then answers {}.
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (import "kindgi" "request_len" (func $request_len (result i32)))
  (import "kindgi" "http_request" (func $http_request (param i32 i32 i32 i32) (result i64)))
  (memory (export "memory") 4)
  (data (i32.const 0) "{\"tools\":[\"hostile.urlflood\"],\"checks\":[]}")
  (data (i32.const 64) "{}")
  (data (i32.const 65536) "{\"url\":\"http://evil.example/")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 42))
    (i32.const 0))
  ;; the head: {"url":"http://evil.example/AAAA…"} of 61,470 bytes at 65536
  (func $head (result i32)
    (memory.fill (i32.const 65564) (i32.const 65) (i32.const 61440))
    (i32.store16 (i32.const 127004) (i32.const 0x7d22)) ;; "}
    (i32.const 61470))
  (func $flood (param $n i32)
    (local $len i32)
    (local.set $len (call $head))
    (block $done
      (loop $again
        (br_if $done (i32.eqz (local.get $n)))
        (drop (call $http_request (i32.const 65536) (local.get $len) (i32.const 0) (i32.const 0)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $again))))
  (func (export "_initialize") (call $flood (i32.const 150)))
  (func (export "kindgi_call") (result i32)
    (call $flood (call $request_len))
    (call $response_write (i32.const 64) (i32.const 2))
    (i32.const 0)))
