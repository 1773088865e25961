(module
  ;; hostile fixture: the outbound HTTP imports used right and wrong; the
  ;; first byte of the request picks the case:
  ;;   a  http_request with its head outside memory (an ABI error)
  ;;   b  http_response_read before any request (an ABI error)
  ;;   c  a request whose head is the rest of the request; answers
  ;;      {answer}\n{body} as read with http_response_read
  ;;   d  as c, then reads the answer a second time (an ABI error)
  ;;   e  a head of 65 KiB (packd answers bad-request)
  ;;   f  as c, but reads the answer to a range outside memory (an ABI error)
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (import "kindgi" "request_len" (func $request_len (result i32)))
  (import "kindgi" "request_read" (func $request_read (param i32)))
  (import "kindgi" "http_request" (func $http_request (param i32 i32 i32 i32) (result i64)))
  (import "kindgi" "http_response_read" (func $http_response_read (param i32 i32)))
  (memory (export "memory") 2)
  (data (i32.const 0) "{\"tools\":[\"*\"],\"checks\":[]}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 27))
    (i32.const 0))
  ;; request at 1024; answer at 8192, then "\n", then the body
  (func $exchange (result i32)
    (local $lens i64) (local $head i32) (local $n i32)
    (local.set $lens (call $http_request (i32.const 1025) (i32.sub (call $request_len) (i32.const 1)) (i32.const 0) (i32.const 0)))
    (local.set $head (i32.wrap_i64 (local.get $lens)))
    (call $http_response_read (i32.const 8192) (i32.add (i32.const 8193) (local.get $head)))
    (i32.store8 (i32.add (i32.const 8192) (local.get $head)) (i32.const 10))
    (i32.add (i32.add (local.get $head) (i32.const 1)) (i32.wrap_i64 (i64.shr_u (local.get $lens) (i64.const 32)))))
  (func (export "kindgi_call") (result i32)
    (local $c i32) (local $n i32)
    (call $request_read (i32.const 1024))
    (local.set $c (i32.load8_u (i32.const 1024)))
    (if (i32.eq (local.get $c) (i32.const 97)) ;; a
      (then (drop (call $http_request (i32.const 131070) (i32.const 10) (i32.const 0) (i32.const 0)))))
    (if (i32.eq (local.get $c) (i32.const 98)) ;; b
      (then (call $http_response_read (i32.const 8192) (i32.const 9000))))
    (if (i32.eq (local.get $c) (i32.const 100)) ;; d
      (then (drop (call $exchange)) (call $http_response_read (i32.const 8192) (i32.const 9000))))
    (if (i32.eq (local.get $c) (i32.const 101)) ;; e
      (then
        (local.set $n (i32.wrap_i64 (call $http_request (i32.const 0) (i32.const 66560) (i32.const 0) (i32.const 0))))
        (call $http_response_read (i32.const 8192) (i32.const 9000))
        (call $response_write (i32.const 8192) (local.get $n))
        (return (i32.const 0))))
    (if (i32.eq (local.get $c) (i32.const 102)) ;; f
      (then
        (drop (call $http_request (i32.const 1025) (i32.sub (call $request_len) (i32.const 1)) (i32.const 0) (i32.const 0)))
        (call $http_response_read (i32.const 131060) (i32.const 0))))
    (call $response_write (i32.const 8192) (call $exchange))
    (i32.const 0))
)
