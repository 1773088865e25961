/* QuickJS (quickjs.c) built as one unit with packd's JSON writer
 * (json_write.c) and reader (json_read.c), which read and build QuickJS's
 * objects as they are laid out and call its internal functions. */
#include "quickjs.c"

/* quickjs.c keeps its own code to js_malloc; the writer's buffer is the
 * C heap's, as runtime.c's are. */
#undef malloc
#undef free
#undef realloc

#include "json_write.c"
#include "json_read.c"
