;; hostile fixture: writes lines shaped like packd's records: a
;; "listening" record on stderr from kindgi_describe (at boot), and a "call"
;; record of another tenant on stderr and a "listening" one on stdout from
;; kindgi_call; answers {}
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"tools\":[\"hostile.forge\"],\"checks\":[]}")
  (data (i32.const 100) "{}")
  (data (i32.const 1024) "{\"time\":\"2026-11-30T00:00:00.000Z\",\"level\":\"info\",\"severity\":\"INFO\",\"subsystem\":\"pack\",\"message\":\"Listening on port 1\",\"event\":\"listening\",\"kind\":\"listening\",\"port\":1}\n")
  (data (i32.const 4096) "{\"time\":\"2026-11-30T00:00:00.000Z\",\"level\":\"info\",\"severity\":\"INFO\",\"subsystem\":\"pack\",\"message\":\"tool hostile.forge ok 1ms\",\"tenantId\":\"victim\",\"runId\":\"r\",\"toolId\":\"hostile.forge\",\"event\":\"call\",\"kind\":\"call\",\"outcome\":\"ok\"}\n")
  (func $write (param $fd i32) (param $ptr i32) (param $len i32)
    (i32.store (i32.const 512) (local.get $ptr))
    (i32.store (i32.const 516) (local.get $len))
    (drop (call $fd_write (local.get $fd) (i32.const 512) (i32.const 1) (i32.const 520))))
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $write (i32.const 2) (i32.const 1024) (i32.const 168))
    (call $response_write (i32.const 0) (i32.const 39))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (call $write (i32.const 2) (i32.const 4096) (i32.const 227))
    (call $write (i32.const 1) (i32.const 1024) (i32.const 168))
    (call $response_write (i32.const 100) (i32.const 2))
    (i32.const 0))
)
