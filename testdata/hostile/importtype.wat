;; invalid as written (built with wat2wasm --no-check): imports a function
;; of type 1 when the module has one type; the fuel pass appends a () -> ()
(module
  (type (func (param i32 i32)))
  (import "kindgi" "response_write" (func $response_write (type 0)))
  (import "kindgi" "request_len" (func (type 1)))
  (memory (export "memory") 1)
  (func (export "kindgi_call") (type 0) (local.get 0) (local.get 1) (call $response_write))
)
