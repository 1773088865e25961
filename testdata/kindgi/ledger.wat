(module
  ;; fixture: the tool and check of the kindgi-written index beside it
  ;; (PROTOCOL-NOTES §1's real example). The request's kind decides the
  ;; answer: "invoke" records an expense, "check-invoke" passes.
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (import "kindgi" "request_len" (func $request_len (result i32)))
  (import "kindgi" "request_read" (func $request_read (param i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[\"acme.ledger.record-expense\"],\"checks\":[\"acme.ledger.checks.response-not-empty\"]}")
  (data (i32.const 200) "{\"expenseId\":\"exp-1\"}")
  (data (i32.const 300) "{\"passed\":true}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 91))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (if (i32.gt_u (call $request_len) (i32.const 60000)) (then unreachable))
    (call $request_read (i32.const 1024))
    ;; {"kind":"invoke"… or {"kind":"check-invoke"…: the byte at 9
    (if (i32.eq (i32.load8_u (i32.const 1033)) (i32.const 99)) ;; c
      (then (call $response_write (i32.const 300) (i32.const 15)))
      (else (call $response_write (i32.const 200) (i32.const 21))))
    (i32.const 0))
)
