(module
  ;; a reactor whose initialiser panics as a Go init does: it writes the
  ;; panic and the goroutine trace on stderr, then traps
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "starting\npanic: the config is missing: set ACME_URL\n\ngoroutine 1 [running]:\nmain.init.0()\n")
  ;; one iovec at 200: the text above, 90 bytes
  (data (i32.const 200) "\00\00\00\00\5a\00\00\00")
  (func (export "_initialize")
    (drop (call $fd_write (i32.const 2) (i32.const 200) (i32.const 1) (i32.const 208)))
    (unreachable))
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32) (i32.const 0))
  (func (export "kindgi_call") (result i32) (i32.const 0)))
