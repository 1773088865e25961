/* Included ahead of QuickJS's own sources (clang -include) for wasm32-wasi.
 *
 * QuickJS bounds its recursion by comparing the C stack pointer with a
 * limit (CONFIG_STACK_CHECK), read with __builtin_frame_address(0), which
 * answers 0 on wasm32: the check never fired, and a deep recursion ran off
 * the shadow stack (a trap, out of bounds memory access) instead of
 * throwing RangeError. The address of a local of the function that asks is
 * on the shadow stack, where the check needs it. */
#include <stdint.h>
static inline __attribute__((always_inline)) uintptr_t packd_stack_pointer(void) {
  volatile char here = 0;
  return (uintptr_t)&here;
}
#define __builtin_frame_address(level) ((void *)packd_stack_pointer())
