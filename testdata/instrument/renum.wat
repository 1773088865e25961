(module
  ;; fixture for the fuel pass: every kind of function reference it must
  ;; renumber (imports, call, call_indirect through element segments,
  ;; ref.func in a global, start, exports, names) and the bulk operations it
  ;; charges by length.
  (import "env" "twice" (func $twice (param i32) (result i32)))
  (type $t (func (result i32)))
  (table 4 funcref)
  (elem (i32.const 0) $a $b)
  (elem declare func $c)
  (global $fref (mut funcref) (ref.func $c))
  (global $started (mut i32) (i32.const 0))
  (memory (export "memory") 1)
  (start $init)
  (func $init (global.set $started (i32.const 40)))
  (func $a (result i32) (i32.const 1))
  (func $b (result i32) (call $twice (i32.const 5)))
  (func $c (result i32) (i32.const 100))
  (func $run (export "run") (result i32)
    (i32.add
      (i32.add (call_indirect (type $t) (i32.const 0)) (call_indirect (type $t) (i32.const 1)))
      (i32.add (global.get $started) (call $c))))
  (func $viaref (export "viaref") (result i32)
    (table.set 0 (i32.const 2) (global.get $fref))
    (call_indirect (type $t) (i32.const 2)))
  (func $bulk (export "bulk") (result i32)
    (memory.fill (i32.const 0) (i32.const 7) (i32.const 1000))
    (memory.copy (i32.const 2000) (i32.const 0) (i32.const 1000))
    (drop (memory.grow (i32.const 1)))
    (i32.add (i32.load8_u (i32.const 2999)) (memory.size)))
  (func $early (export "early") (param $x i32) (result i32)
    (block $out
      (br_if $out (local.get $x))
      (return (i32.const 7)))
    (i32.const 9)))
