/*
 * packd's JavaScript runtime: QuickJS behind the guest ABI (abi/GUEST-ABI.md).
 *
 * The module is built once (make sdk/js/runtime/runtime.wasm) and carries
 * no pack. `packd build-js` makes a pack's module from it: it appends the
 * pack's bundled JavaScript as a passive data segment and gives
 * kindgi_js_bundle a body that copies it out (memory.init). At
 * _initialize this file's constructor evaluates prelude.js (console,
 * fetch, crypto, timers, the dispatch) and then the bundle, so the pooled
 * snapshot holds the parsed, evaluated pack: a call only decodes its
 * request, runs the handler and its jobs, and writes the answer.
 *
 * What reaches the prelude from C is the object __packd_native, which the
 * prelude takes and deletes: write, random, http, sleep, monotonic,
 * environ, utf8Encode, utf8Decode.
 */
#include <stdint.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "quickjs.h"

#define IMPORT(name) __attribute__((import_module("kindgi"), import_name(name)))
IMPORT("request_len") int32_t kindgi_request_len(void);
IMPORT("request_read") void kindgi_request_read(void *ptr);
IMPORT("response_write") void kindgi_response_write(const void *ptr, int32_t len);
IMPORT("http_request") int64_t kindgi_http_request(const void *head, int32_t head_len, const void *body, int32_t body_len);
IMPORT("http_response_read") void kindgi_http_response_read(void *head, void *body);

/* The prelude, made from prelude.js by the Makefile (prelude.h). */
static const char prelude_js[] = {
#include "prelude.h"
    0};

/*
 * kindgi_js_bundle(0) is the bundle's length; kindgi_js_bundle(dst)
 * copies it to dst. packd build-js replaces this body; as built, the
 * runtime has no bundle. Weak and not inlined, so no caller assumes what
 * it returns.
 */
static volatile int32_t no_bundle;
__attribute__((weak, noinline, export_name("kindgi_js_bundle"))) int32_t kindgi_js_bundle(char *dst) {
  (void)dst;
  return no_bundle;
}

/* The shadow stack QuickJS may use (the link gives 1 MiB, placed first so
 * an overflow traps instead of writing over data). */
#define JS_STACK (1 << 20)
/* Memory the allocator takes and gives back at start-up, so that a
 * typical call does not grow memory (a grown instance is not pooled as
 * cheaply): see GUEST-ABI.md, "Pooled instances". */
#define HEAP_HEADROOM (4 << 20)

static JSRuntime *rt;
static JSContext *ctx;
static JSValue hooks; /* the prelude's answer: {loaded, call, describe, drive, result} */
enum { HOOK_LOADED, HOOK_CALL, HOOK_DESCRIBE, HOOK_DRIVE, HOOK_RESULT, HOOKS };
static const char *const hook_names[HOOKS] = {"loaded", "call", "describe", "drive", "result"};
static JSValue hook_fn[HOOKS];

static void write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) return;
    p += w;
    n -= (size_t)w;
  }
}

/* fail prints what went wrong on stderr and traps: packd reports a module
 * whose initialisation traps with what it wrote. */
static void fail(const char *what) {
  write_all(2, what, strlen(what));
  write_all(2, "\n", 1);
  __builtin_trap();
}

/* describe_error writes what a thrown value says to stderr: its stack's
 * frames, then one line "where: Name: message (first frame)", last, since
 * packd quotes a guest's last line when its load fails. */
static void describe_error(const char *where, JSValueConst e) {
  const char *msg = JS_ToCString(ctx, e);
  const char *frames = NULL;
  JSValue stack = JS_IsObject(e) ? JS_GetPropertyStr(ctx, e, "stack") : JS_UNDEFINED;
  if (JS_IsString(stack)) frames = JS_ToCString(ctx, stack);
  size_t first = 0;
  if (frames) {
    write_all(2, frames, strlen(frames));
    while (frames[first] == ' ') first++;
  }
  write_all(2, where, strlen(where));
  write_all(2, ": ", 2);
  if (msg) write_all(2, msg, strlen(msg));
  if (frames && frames[first]) {
    const char *nl = strchr(frames + first, '\n');
    write_all(2, " (", 2);
    write_all(2, frames + first, nl ? (size_t)(nl - frames - first) : strlen(frames + first));
    write_all(2, ")", 1);
  }
  write_all(2, "\n", 1);
  if (frames) JS_FreeCString(ctx, frames);
  if (msg) JS_FreeCString(ctx, msg);
  JS_FreeValue(ctx, stack);
}

/* fail_exception describes the pending exception and traps. */
static void fail_exception(const char *where) {
  describe_error(where, JS_GetException(ctx));
  __builtin_trap();
}

/* Promise rejections nothing handles (yet): kept by the tracker, reported
 * when the load or a call is over. A rejection handled later (a handler
 * attached in a later job) is taken off again. */
#define MAX_UNHANDLED 16
static JSValue unhandled[MAX_UNHANDLED], unhandled_reason[MAX_UNHANDLED];
static int n_unhandled, n_unhandled_lost;

static void track_rejection(JSContext *c, JSValueConst promise, JSValueConst reason, JS_BOOL handled, void *opaque) {
  (void)opaque;
  if (handled) {
    for (int i = 0; i < n_unhandled; i++) {
      if (JS_VALUE_GET_PTR(unhandled[i]) == JS_VALUE_GET_PTR(promise)) {
        JS_FreeValue(c, unhandled[i]);
        JS_FreeValue(c, unhandled_reason[i]);
        n_unhandled--;
        unhandled[i] = unhandled[n_unhandled], unhandled_reason[i] = unhandled_reason[n_unhandled];
        return;
      }
    }
    return;
  }
  if (n_unhandled == MAX_UNHANDLED) {
    n_unhandled_lost++;
    return;
  }
  unhandled[n_unhandled] = JS_DupValue(c, promise);
  unhandled_reason[n_unhandled] = JS_DupValue(c, reason);
  n_unhandled++;
}

/* report_unhandled writes each rejection nothing handled to stderr, as
 * Node reports one (each line headed by where), and forgets them; it
 * answers how many there were. */
static int report_unhandled(const char *where) {
  int n = n_unhandled + n_unhandled_lost;
  for (int i = 0; i < n_unhandled; i++) {
    describe_error(where, unhandled_reason[i]);
    JS_FreeValue(ctx, unhandled[i]);
    JS_FreeValue(ctx, unhandled_reason[i]);
  }
  n_unhandled = n_unhandled_lost = 0;
  return n;
}

/* write(fd, string): fd 1 or 2. */
static JSValue native_write(JSContext *c, JSValueConst this, int argc, JSValueConst *argv) {
  int32_t fd;
  size_t n;
  if (argc < 2 || JS_ToInt32(c, &fd, argv[0])) return JS_EXCEPTION;
  if (fd != 1 && fd != 2) return JS_ThrowRangeError(c, "fd %d", fd);
  const char *s = JS_ToCStringLen(c, &n, argv[1]);
  if (!s) return JS_EXCEPTION;
  write_all(fd, s, n);
  JS_FreeCString(c, s);
  return JS_UNDEFINED;
}

/* bytes_of finds the bytes of an ArrayBuffer, a typed array or a DataView. */
static uint8_t *bytes_of(JSContext *c, JSValueConst v, size_t *len) {
  size_t off, n, per;
  JSValue buf = JS_GetTypedArrayBuffer(c, v, &off, &n, &per);
  if (!JS_IsException(buf)) {
    size_t size;
    uint8_t *p = JS_GetArrayBuffer(c, &size, buf);
    JS_FreeValue(c, buf);
    if (!p) return NULL;
    *len = n;
    return p + off;
  }
  JS_FreeValue(c, JS_GetException(c));
  uint8_t *p = JS_GetArrayBuffer(c, len, v);
  if (p) return p;
  JS_FreeValue(c, JS_GetException(c));
  JSValue inner = JS_GetPropertyStr(c, v, "buffer"); /* a DataView */
  if (JS_IsObject(inner)) {
    int64_t o = 0, l = 0;
    JSValue ov = JS_GetPropertyStr(c, v, "byteOffset"), lv = JS_GetPropertyStr(c, v, "byteLength");
    JS_ToInt64(c, &o, ov);
    JS_ToInt64(c, &l, lv);
    size_t size;
    p = JS_GetArrayBuffer(c, &size, inner);
    JS_FreeValue(c, inner);
    if (p && o >= 0 && l >= 0 && (uint64_t)o + (uint64_t)l <= size) {
      *len = (size_t)l;
      return p + o;
    }
  }
  JS_ThrowTypeError(c, "not an ArrayBuffer, a typed array or a DataView");
  return NULL;
}

/* random(view): fills it from random_get. */
static JSValue native_random(JSContext *c, JSValueConst this, int argc, JSValueConst *argv) {
  size_t n;
  uint8_t *p = argc > 0 ? bytes_of(c, argv[0], &n) : NULL;
  if (!p) return JS_EXCEPTION;
  while (n > 0) { /* getentropy takes at most 256 bytes */
    size_t k = n > 256 ? 256 : n;
    if (getentropy(p, k) != 0) return JS_ThrowInternalError(c, "random_get failed");
    p += k;
    n -= k;
  }
  return JS_UNDEFINED;
}

/* http(head, body): one request through the egress imports; answers
 * [answer JSON, ArrayBuffer body]. */
static JSValue native_http(JSContext *c, JSValueConst this, int argc, JSValueConst *argv) {
  size_t head_len, body_len = 0;
  const uint8_t *body = NULL;
  if (argc < 1) return JS_ThrowTypeError(c, "http: no head");
  const char *head = JS_ToCStringLen(c, &head_len, argv[0]);
  if (!head) return JS_EXCEPTION;
  if (argc > 1 && !JS_IsUndefined(argv[1]) && !JS_IsNull(argv[1])) {
    body = bytes_of(c, argv[1], &body_len);
    if (!body) {
      JS_FreeCString(c, head);
      return JS_EXCEPTION;
    }
  }
  int64_t r = kindgi_http_request(head, (int32_t)head_len, body, (int32_t)body_len);
  JS_FreeCString(c, head);
  uint32_t alen = (uint32_t)r, blen = (uint32_t)((uint64_t)r >> 32);
  char *a = malloc(alen + 1);
  uint8_t *b = malloc(blen ? blen : 1);
  if (!a || !b) {
    free(a);
    free(b);
    return JS_ThrowOutOfMemory(c);
  }
  kindgi_http_response_read(a, b);
  JSValue out = JS_NewArray(c);
  JS_SetPropertyUint32(c, out, 0, JS_NewStringLen(c, a, alen));
  JS_SetPropertyUint32(c, out, 1, JS_NewArrayBufferCopy(c, b, blen));
  free(a);
  free(b);
  return out;
}

/* sleep(ms): poll_oneoff, which packd ends at the call's deadline. */
static JSValue native_sleep(JSContext *c, JSValueConst this, int argc, JSValueConst *argv) {
  double ms;
  if (argc < 1 || JS_ToFloat64(c, &ms, argv[0])) return JS_EXCEPTION;
  if (ms > 86400e3) ms = 86400e3; /* a day: the call's deadline comes first */
  if (ms > 0) {
    struct timespec ts = {(time_t)(ms / 1000), (long)((ms - (double)(time_t)(ms / 1000) * 1000) * 1e6)};
    nanosleep(&ts, NULL);
  }
  return JS_UNDEFINED;
}

/* monotonic(): milliseconds on the monotonic clock. */
static JSValue native_monotonic(JSContext *c, JSValueConst this, int argc, JSValueConst *argv) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return JS_NewFloat64(c, (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6);
}

extern char **environ;

/* environ(): the environment the guest was given, as an object. */
static JSValue native_environ(JSContext *c, JSValueConst this, int argc, JSValueConst *argv) {
  JSValue out = JS_NewObject(c);
  for (char **e = environ; e && *e; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq) continue;
    JSAtom k = JS_NewAtomLen(c, *e, (size_t)(eq - *e));
    JS_SetProperty(c, out, k, JS_NewString(c, eq + 1));
    JS_FreeAtom(c, k);
  }
  return out;
}

/* utf8Encode(string): an ArrayBuffer of its UTF-8. QuickJS writes a lone
 * surrogate in its 3-byte form (ED A0..BF xx); TextEncoder writes U+FFFD. */
static JSValue native_utf8_encode(JSContext *c, JSValueConst this, int argc, JSValueConst *argv) {
  size_t n;
  const char *s = JS_ToCStringLen(c, &n, argc > 0 ? argv[0] : JS_UNDEFINED);
  if (!s) return JS_EXCEPTION;
  const uint8_t *u = (const uint8_t *)s;
  uint8_t *fixed = NULL;
  for (size_t i = 0; i + 2 < n; i++) {
    if (u[i] == 0xED && (u[i + 1] & 0xE0) == 0xA0) {
      if (!fixed) {
        fixed = malloc(n);
        if (!fixed) {
          JS_FreeCString(c, s);
          return JS_ThrowOutOfMemory(c);
        }
        memcpy(fixed, u, n);
      }
      fixed[i] = 0xEF, fixed[i + 1] = 0xBF, fixed[i + 2] = 0xBD;
      i += 2;
    }
  }
  JSValue out = JS_NewArrayBufferCopy(c, fixed ? fixed : u, n);
  free(fixed);
  JS_FreeCString(c, s);
  return out;
}

/* utf8Decode(view): the string of its UTF-8 bytes. */
static JSValue native_utf8_decode(JSContext *c, JSValueConst this, int argc, JSValueConst *argv) {
  size_t n;
  uint8_t *p = argc > 0 ? bytes_of(c, argv[0], &n) : NULL;
  if (!p) return JS_EXCEPTION;
  return JS_NewStringLen(c, (const char *)p, n);
}

/* The answer packd_json_write made (json.c), when it could: answer()
 * writes it. */
int packd_json_write(JSContext *c, JSValueConst v, char **out, size_t *n);
JSValue packd_json_parse(JSContext *c, const char *buf, size_t len, const char *filename);
static char *answer_json;
static size_t answer_len;

/* json(v): true when v's JSON is made (answer() writes it), false when
 * JSON.stringify must make it (see json.c). */
static JSValue native_json(JSContext *c, JSValueConst this, int argc, JSValueConst *argv) {
  free(answer_json);
  answer_json = NULL;
  return JS_NewBool(c, argc > 0 && packd_json_write(c, argv[0], &answer_json, &answer_len) == 1);
}

static const JSCFunctionListEntry natives[] = {
    JS_CFUNC_DEF("json", 1, native_json),
    JS_CFUNC_DEF("write", 2, native_write),
    JS_CFUNC_DEF("random", 1, native_random),
    JS_CFUNC_DEF("http", 2, native_http),
    JS_CFUNC_DEF("sleep", 1, native_sleep),
    JS_CFUNC_DEF("monotonic", 0, native_monotonic),
    JS_CFUNC_DEF("environ", 0, native_environ),
    JS_CFUNC_DEF("utf8Encode", 1, native_utf8_encode),
    JS_CFUNC_DEF("utf8Decode", 1, native_utf8_decode),
};

/* run_jobs runs the job queue (promise reactions) until it is empty. */
static void run_jobs(void) {
  JSContext *c;
  for (;;) {
    int r = JS_ExecutePendingJob(rt, &c);
    if (r == 0) return;
    if (r < 0) JS_FreeValue(c, JS_GetException(c)); /* the prelude's promise records it */
  }
}

/* hook calls one of the prelude's hooks. */
static JSValue hook(int which, int argc, JSValueConst *argv) {
  return JS_Call(ctx, hook_fn[which], hooks, argc, argv);
}

/* settle runs jobs and timers until the call's promise settles, or
 * nothing is left that could settle it (drive answers 0). */
static void settle(void) {
  for (;;) {
    run_jobs();
    JSValue r = hook(HOOK_DRIVE, 0, NULL);
    int32_t more = 0;
    if (JS_IsException(r)) {
      JS_FreeValue(ctx, JS_GetException(ctx));
    } else {
      JS_ToInt32(ctx, &more, r);
    }
    JS_FreeValue(ctx, r);
    if (!more) break;
  }
}

/* answer writes the prelude's result ([status, JSON]) and returns status. */
static int32_t answer(void) {
  JSValue r = hook(HOOK_RESULT, 0, NULL);
  if (JS_IsException(r)) fail_exception("packd: the runtime's result");
  JSValue sv = JS_GetPropertyUint32(ctx, r, 0), jv = JS_GetPropertyUint32(ctx, r, 1);
  int32_t status = 1;
  JS_ToInt32(ctx, &status, sv);
  if (status == 0 && answer_json && JS_IsUndefined(jv)) {
    kindgi_response_write(answer_json, (int32_t)answer_len);
  } else if (JS_IsString(jv)) {
    size_t n;
    const char *s = JS_ToCStringLen(ctx, &n, jv);
    if (!s) fail_exception("packd: the answer");
    kindgi_response_write(s, (int32_t)n);
    JS_FreeCString(ctx, s);
  }
  JS_FreeValue(ctx, jv);
  JS_FreeValue(ctx, r);
  return status;
}

static void eval_or_fail(const char *src, size_t n, const char *name) {
  JSValue v = JS_Eval(ctx, src, n, name, JS_EVAL_TYPE_GLOBAL);
  if (JS_IsException(v)) fail_exception(name);
  JS_FreeValue(ctx, v);
}


/* QuickJS's allocator (JS_NewRuntime2). A pooled call starts from the
 * snapshot and its instance is reset after it, so what a call allocates
 * is gone with it anyway; what costs is the allocating. QuickJS asks for
 * many small blocks (an object, its properties, a short string: a 64 KiB
 * input of small items is about 6,000), and dlmalloc's bins and headers
 * made each about 400 units of fuel, a fifth of such an echo. Blocks of up
 * to JSA_SMALL bytes come from free lists by size (16-byte steps), carved
 * from JSA_CHUNK chunks of malloc; a freed one goes back on its list, to
 * be reused at its size; larger blocks are malloc's. A block carries its
 * size class in an 8-byte header (0: malloc's); blocks are 8-aligned.
 * Blocks on a list serve no other size, so a call whose live blocks move
 * from size to size in bulk would take new chunks for each: past
 * JSA_CARVE_MAX carved, a new block of a size with none free is malloc's
 * (given back to it when freed), and memory is bounded as with malloc
 * alone, plus that (jshostile.churn). */
#define JSA_SMALL 512
#define JSA_CLASSES (JSA_SMALL / 16)
#define JSA_CHUNK (64 << 10)
#define JSA_CARVE_MAX (16 << 20)
#define JSA_HEADER 8

typedef struct jsa_block {
  struct jsa_block *next;
} jsa_block;
static jsa_block *jsa_free_lists[JSA_CLASSES];
static char *jsa_cur, *jsa_end;
static size_t jsa_carved;

/* jsa_usable is what the block at ptr holds. */
static size_t jsa_usable(const void *ptr);

/* QuickJS counts its memory (malloc_size, against its cycle collector's
 * threshold, JS_SetGCThreshold) as it did with dlmalloc here, where the
 * usable size of a block is unknown: 8 bytes a block. Counting the blocks'
 * sizes instead would change when the collector runs (past 64 MiB, then
 * past 1.5 times what was live), and so what a call costs: a change of its
 * own, not this allocator's. */
#define JSA_COUNTED 8

static size_t jsa_usable_unknown(const void *ptr) {
  (void)ptr;
  return 0;
}

static size_t jsa_usable(const void *ptr) {
  if (!ptr) return 0;
  const char *b = (const char *)ptr - JSA_HEADER;
  uint32_t c = *(const uint32_t *)b;
  return c ? ((size_t)c << 4) - JSA_HEADER : malloc_usable_size((void *)b) - JSA_HEADER;
}

static void *jsa_malloc(JSMallocState *s, size_t size) {
  if (size > s->malloc_limit || s->malloc_size + size > s->malloc_limit) return NULL; /* as js_def_malloc */
  char *b = NULL;
  uint32_t c = size <= JSA_SMALL - JSA_HEADER ? (uint32_t)((size + JSA_HEADER + 15) >> 4) : 0;
  if (c) {
    size_t n = (size_t)c << 4;
    jsa_block *f = jsa_free_lists[c - 1];
    if (f) {
      jsa_free_lists[c - 1] = f->next;
      b = (char *)f;
    } else if (jsa_cur && (size_t)(jsa_end - jsa_cur) >= n) {
      b = jsa_cur;
      jsa_cur += n;
    } else if (jsa_carved < JSA_CARVE_MAX) {
      char *chunk = malloc(JSA_CHUNK);
      if (!chunk) return NULL;
      jsa_carved += JSA_CHUNK;
      jsa_cur = chunk + n;
      jsa_end = chunk + JSA_CHUNK;
      b = chunk;
    }
  }
  if (b) {
    *(uint32_t *)b = c;
  } else {
    if (size > SIZE_MAX - JSA_HEADER || !(b = malloc(size + JSA_HEADER))) return NULL;
    *(uint32_t *)b = 0;
  }
  s->malloc_size += JSA_COUNTED;
  s->malloc_count++;
  return b + JSA_HEADER;
}

static void jsa_free(JSMallocState *s, void *ptr) {
  if (!ptr) return;
  char *b = (char *)ptr - JSA_HEADER;
  uint32_t c = *(uint32_t *)b;
  s->malloc_count--;
  s->malloc_size -= JSA_COUNTED;
  if (c) {
    jsa_block *f = (jsa_block *)b;
    f->next = jsa_free_lists[c - 1];
    jsa_free_lists[c - 1] = f;
  } else {
    free(b);
  }
}

static void *jsa_realloc(JSMallocState *s, void *ptr, size_t size) {
  if (!ptr) return size ? jsa_malloc(s, size) : NULL;
  if (!size) {
    jsa_free(s, ptr);
    return NULL;
  }
  size_t had = jsa_usable(ptr);
  char *b = (char *)ptr - JSA_HEADER;
  if (*(uint32_t *)b) {
    if (size <= had) return ptr; /* it fits its class */
  } else if (size > JSA_SMALL - JSA_HEADER) {
    if (size > SIZE_MAX - JSA_HEADER) return NULL;
    char *nb = realloc(b, size + JSA_HEADER);
    return nb ? nb + JSA_HEADER : NULL;
  }
  void *q = jsa_malloc(s, size);
  if (!q) return NULL;
  memcpy(q, ptr, had < size ? had : size);
  jsa_free(s, ptr);
  return q;
}

static const JSMallocFunctions jsa_functions = {jsa_malloc, jsa_free, jsa_realloc, jsa_usable_unknown};

__attribute__((constructor)) static void packd_js_init(void) {
  int32_t n = kindgi_js_bundle(NULL);
  if (n <= 0) fail("packd: this module is the JavaScript runtime without a pack: make a pack's module with packd build-js");
  char *src = malloc((size_t)n + 1);
  if (!src) fail("packd: out of memory for the bundle");
  kindgi_js_bundle(src);
  src[n] = 0;

  rt = JS_NewRuntime2(&jsa_functions, NULL);
  if (!rt) fail("packd: QuickJS did not start");
  JS_SetMaxStackSize(rt, JS_STACK - (64 << 10));
  /* Every call starts from the snapshot, so little garbage outlives one:
   * reference counting frees most of it, and the cycle collector runs
   * only past 64 MiB as QuickJS counts it (it would write to every
   * object's header); QuickJS counts 8 bytes a block here (JSA_COUNTED),
   * so that is past 8 million blocks. */
  JS_SetGCThreshold(rt, 64 << 20);
  ctx = JS_NewContext(rt);
  if (!ctx) fail("packd: QuickJS did not start");
  JS_SetHostPromiseRejectionTracker(rt, track_rejection, NULL);

  JSValue global = JS_GetGlobalObject(ctx);
  JSValue native = JS_NewObject(ctx);
  JS_SetPropertyFunctionList(ctx, native, natives, sizeof natives / sizeof natives[0]);
  JS_SetPropertyStr(ctx, global, "__packd_native", native);
  eval_or_fail(prelude_js, sizeof prelude_js - 1, "packd:prelude");
  hooks = JS_GetPropertyStr(ctx, global, "__packd_hooks");
  JSAtom hooks_name = JS_NewAtom(ctx, "__packd_hooks");
  JS_DeleteProperty(ctx, global, hooks_name, 0);
  JS_FreeAtom(ctx, hooks_name);
  JS_FreeValue(ctx, global);
  if (!JS_IsObject(hooks)) fail("packd: the prelude set no hooks");
  for (int i = 0; i < HOOKS; i++) {
    hook_fn[i] = JS_GetPropertyStr(ctx, hooks, hook_names[i]);
    if (!JS_IsFunction(ctx, hook_fn[i])) fail("packd: the prelude lacks a hook");
  }

  eval_or_fail(src, (size_t)n, "pack.js");
  free(src);
  JSValue loaded = hook(HOOK_LOADED, 0, NULL); /* runs the bundle's jobs; throws what its top level rejected */
  if (JS_IsException(loaded)) fail_exception("pack.js");
  JS_FreeValue(ctx, loaded);
  run_jobs();
  /* A rejection the pack's top level left unhandled fails the load, as it
   * would end a Node process. */
  if (report_unhandled("pack.js: a promise rejection was not handled")) __builtin_trap();
  JS_RunGC(rt);

  /* volatile: without it clang drops a malloc whose block is only freed,
   * and no headroom was taken (every call of a 64 KiB input grew memory,
   * a million fuel a page). */
  void *volatile room = malloc(HEAP_HEADROOM);
  free(room);
}

__attribute__((export_name("kindgi_abi_version"))) int32_t kindgi_abi_version(void) { return 1; }

__attribute__((export_name("kindgi_describe"))) int32_t kindgi_describe(void) {
  JSValue r = hook(HOOK_DESCRIBE, 0, NULL);
  if (JS_IsException(r)) fail_exception("packd: describe");
  size_t n;
  const char *s = JS_ToCStringLen(ctx, &n, r);
  if (!s) fail_exception("packd: describe");
  kindgi_response_write(s, (int32_t)n);
  return 0;
}

/* The last call's request, kept instead of freed: freeing its values one
 * by one (a third of reading them) is work a pooled instance, set back to
 * its snapshot after every call, never needs. An instance that serves
 * another call without a reset frees it then: it keeps one request at
 * most. */
static JSValue kept_request = JS_UNDEFINED;

__attribute__((export_name("kindgi_call"))) int32_t kindgi_call(void) {
  JS_FreeValue(ctx, kept_request);
  kept_request = JS_UNDEFINED;
  free(answer_json);
  answer_json = NULL;
  int32_t n = kindgi_request_len();
  char *buf = malloc((size_t)n + 1);
  if (!buf) fail("packd: out of memory for the request");
  kindgi_request_read(buf);
  buf[n] = 0;
  JSValue req = packd_json_parse(ctx, buf, (size_t)n, "<request>");
  free(buf);
  if (JS_IsException(req)) fail_exception("packd: the request");
  JSValue started = hook(HOOK_CALL, 1, (JSValueConst *)&req);
  kept_request = req;
  if (JS_IsException(started)) fail_exception("packd: call");
  int32_t none = 0;
  JS_ToInt32(ctx, &none, started);
  JS_FreeValue(ctx, started);
  if (none) return 2;
  settle();
  report_unhandled("Uncaught (in promise)"); /* written, not thrown: the call answers as its handler did */
  return answer();
}
