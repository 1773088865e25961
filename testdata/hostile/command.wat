(module
  ;; a WASI command, as Go builds a pack without -buildmode=c-shared: it
  ;; exports _start, not _initialize, and its exports trap until _start has
  ;; run (Go's runtime is not initialised)
  (memory (export "memory") 1)
  (func (export "_start"))
  (func (export "kindgi_abi_version") (result i32) (unreachable))
  (func (export "kindgi_describe") (result i32) (unreachable))
  (func (export "kindgi_call") (result i32) (unreachable)))
