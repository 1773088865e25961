(module
  ;; instrument fixture: bulk memory operations longer than a chunk (256 KiB),
  ;; overlapping both ways, out of bounds, and from a passive segment, each
  ;; followed by a checksum of the whole memory
  (memory (export "memory") 32)
  (data $seg "0123456789abcdefghijklmnopqrstuvwxyz")
  ;; sum: an order-sensitive hash of every 8 bytes of memory
  (func $sum (result i64)
    (local $i i32) (local $h i64)
    (loop $l
      (local.set $h (i64.add (i64.mul (local.get $h) (i64.const 1099511628211))
                             (i64.load (local.get $i))))
      (local.set $i (i32.add (local.get $i) (i32.const 8)))
      (br_if $l (i32.lt_u (local.get $i) (i32.mul (memory.size) (i32.const 65536)))))
    (local.get $h))
  ;; pattern: a non-repeating byte pattern over the first 1.5 MiB
  (func $pattern
    (local $i i32)
    (loop $l
      (i32.store (local.get $i) (i32.mul (local.get $i) (i32.const 2654435761)))
      (local.set $i (i32.add (local.get $i) (i32.const 4)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const 1572864)))))
  (func (export "fill") (result i64)
    (call $pattern)
    (memory.fill (i32.const 3) (i32.const 0xa5) (i32.const 1000003))
    (call $sum))
  (func (export "copyup") (result i64)
    ;; overlapping, to a higher address: must be copied from the back
    (call $pattern)
    (memory.copy (i32.const 100001) (i32.const 7) (i32.const 1200000))
    (call $sum))
  (func (export "copydown") (result i64)
    ;; overlapping, to a lower address: must be copied from the front
    (call $pattern)
    (memory.copy (i32.const 5) (i32.const 300007) (i32.const 1200000))
    (call $sum))
  (func (export "copyexact") (result i64)
    ;; exactly two chunks, and exactly one
    (call $pattern)
    (memory.copy (i32.const 524288) (i32.const 0) (i32.const 524288))
    (memory.copy (i32.const 1) (i32.const 0) (i32.const 262144))
    (call $sum))
  (func (export "fillpast") (result i32)
    ;; past the end by one byte: traps
    (memory.fill (i32.const 1) (i32.const 1) (i32.mul (memory.size) (i32.const 65536)))
    (i32.const 1))
  (func (export "copypast") (result i32)
    (memory.copy (i32.const 0xfffffff0) (i32.const 0) (i32.const 600000))
    (i32.const 1))
  (func (export "init") (result i64)
    ;; a segment is short: init within it, then past it (traps)
    (memory.init $seg (i32.const 9) (i32.const 2) (i32.const 30))
    (call $sum))
  (func (export "initpast") (result i32)
    (memory.init $seg (i32.const 9) (i32.const 0) (i32.const 300000))
    (i32.const 1)))
