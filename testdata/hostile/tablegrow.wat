(module
  ;; hostile fixture: grows its table by 65536 elements 100 times (52 MiB
  ;; unclamped), then by 0xfffffff0 (32 GiB) 1000 times; throws if the
  ;; table ever holds more than 1 << 20 elements (packd's default limit)
  (import "kindgi" "response_write" (func $response_write (param i32 i32)))
  (import "kindgi" "request_len" (func $request_len (result i32)))
  (import "kindgi" "request_read" (func $request_read (param i32)))
  (memory (export "memory") 1)
  (table $t 1 funcref)
  (data (i32.const 0) "{\"tools\":[\"hostile.tablegrow\"],\"checks\":[]}")
  (data (i32.const 64) "{\"name\":\"Error\",\"message\":\"the table grew past its limit\",\"stack\":\"\"}")
  (data (i32.const 200) "{}")
  (func (export "kindgi_abi_version") (result i32) (i32.const 1))
  (func (export "kindgi_describe") (result i32)
    (call $response_write (i32.const 0) (i32.const 43))
    (i32.const 0))
  (func (export "kindgi_call") (result i32)
    (local $i i32)
    (loop $small
      (drop (table.grow $t (ref.null func) (i32.const 65536)))
      (br_if $small (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (i32.const 100))))
    (local.set $i (i32.const 0))
    (loop $huge
      (drop (table.grow $t (ref.null func) (i32.const 0xfffffff0)))
      (br_if $huge (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (i32.const 1000))))
    (if (i32.gt_u (table.size $t) (i32.const 1048576))
      (then
        (call $response_write (i32.const 64) (i32.const 69))
        (return (i32.const 1))))
    (call $response_write (i32.const 200) (i32.const 2))
    (i32.const 0))
)
