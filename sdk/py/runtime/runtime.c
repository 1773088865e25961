/*
 * packd's Python runtime: CPython 3.11 behind the guest ABI
 * (abi/GUEST-ABI.md).
 *
 * The module is built once (make py-runtime) from CPython's source, pinned
 * and checked against its SHA-256, and carries no pack. A pack's module is
 * made from it as a JavaScript pack's is: the pack's sources become a
 * passive data segment and kindgi_py_bundle gets a body that copies them
 * out (memory.init). At _initialize this file's constructor starts the
 * interpreter (no files: the standard library modules it has are frozen
 * into the module, freeze.py) and imports _packd_runtime.py, which imports
 * the pack: the pooled snapshot holds a started interpreter with the
 * pack's modules imported, and a call only decodes its request, runs the
 * handler and writes the answer.
 *
 * What reaches Python from C is the module _packd: bundle() and
 * http(head, body).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define IMPORT(name) __attribute__((import_module("kindgi"), import_name(name)))
IMPORT("request_len") int32_t kindgi_request_len(void);
IMPORT("request_read") void kindgi_request_read(void *ptr);
IMPORT("response_write") void kindgi_response_write(const void *ptr, int32_t len);
IMPORT("http_request") int64_t kindgi_http_request(const void *head, int32_t head_len, const void *body, int32_t body_len);
IMPORT("http_response_read") void kindgi_http_response_read(void *head, void *body);

/* The frozen modules: the standard library's a pack may import, and
 * packd's own (freeze.py writes them). */
extern const struct _frozen packd_frozen[];

/*
 * kindgi_py_bundle(0) is the bundle's length; kindgi_py_bundle(dst) copies
 * it to dst. A pack's build replaces this body; as built, the runtime has
 * no bundle. Weak and not inlined, so no caller assumes what it returns.
 */
static volatile int32_t no_bundle;
__attribute__((weak, noinline, export_name("kindgi_py_bundle"))) int32_t kindgi_py_bundle(char *dst) {
  (void)dst;
  return no_bundle;
}

/* Memory the allocator takes and gives back at start-up, so that a typical
 * call does not grow memory (see GUEST-ABI.md, "Pooled instances"). */
#define HEAP_HEADROOM (8 << 20)

static PyObject *call_fn, *describe_fn;

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

static PyObject *native_bundle(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  int32_t n = kindgi_py_bundle(NULL);
  if (n < 0) {
    PyErr_SetString(PyExc_RuntimeError, "the bundle's length is negative");
    return NULL;
  }
  PyObject *b = PyBytes_FromStringAndSize(NULL, n);
  if (b != NULL && n > 0) kindgi_py_bundle(PyBytes_AS_STRING(b));
  return b;
}

/* http(head, body) -> (answer head, body): one outbound request through
 * packd (GUEST-ABI.md, "Outbound HTTP"). */
static PyObject *native_http(PyObject *self, PyObject *args) {
  (void)self;
  Py_buffer head, body;
  if (!PyArg_ParseTuple(args, "y*y*", &head, &body)) return NULL;
  if (head.len > INT32_MAX || body.len > INT32_MAX) {
    PyBuffer_Release(&head);
    PyBuffer_Release(&body);
    PyErr_SetString(PyExc_ValueError, "the request is too large");
    return NULL;
  }
  int64_t n = kindgi_http_request(head.buf, (int32_t)head.len, body.buf, (int32_t)body.len);
  PyBuffer_Release(&head);
  PyBuffer_Release(&body);
  int32_t hn = (int32_t)(uint32_t)(uint64_t)n, bn = (int32_t)(uint32_t)((uint64_t)n >> 32);
  if (hn < 0 || bn < 0) {
    PyErr_SetString(PyExc_RuntimeError, "packd answered a request with a negative length");
    return NULL;
  }
  PyObject *h = PyBytes_FromStringAndSize(NULL, hn);
  PyObject *b = PyBytes_FromStringAndSize(NULL, bn);
  if (h == NULL || b == NULL) {
    Py_XDECREF(h);
    Py_XDECREF(b);
    return NULL;
  }
  kindgi_http_response_read(PyBytes_AS_STRING(h), PyBytes_AS_STRING(b));
  return Py_BuildValue("(NN)", h, b);
}

static PyMethodDef native_methods[] = {
    {"bundle", native_bundle, METH_NOARGS, "The pack's sources, as its build bundled them."},
    {"http", native_http, METH_VARARGS, "One outbound HTTP request through packd."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {PyModuleDef_HEAD_INIT, "_packd", NULL, -1, native_methods};

static PyObject *init_native(void) { return PyModule_Create(&native_module); }

static void fail_status(const char *where, PyStatus status) {
  char msg[512];
  snprintf(msg, sizeof msg, "packd's Python runtime: %s: %s%s%s", where, status.func ? status.func : "",
           status.func ? ": " : "", status.err_msg ? status.err_msg : "failed");
  fail(msg);
}

__attribute__((constructor)) static void start(void) {
  PyImport_FrozenModules = packd_frozen;
  if (PyImport_AppendInittab("_packd", init_native) != 0) fail("packd's Python runtime: _packd");

  PyConfig config;
  PyConfig_InitIsolatedConfig(&config);
  config.site_import = 0;
  config.buffered_stdio = 0; /* print reaches packd as it is written */
  config.install_signal_handlers = 0;
  config.write_bytecode = 0;
  config.user_site_directory = 0;
  config.pathconfig_warnings = 0;
  config.module_search_paths_set = 1; /* none: every module is frozen or built in */
  config.use_frozen_modules = 1;
  config.safe_path = 1;
  config.parse_argv = 0;
  PyStatus status = PyConfig_SetString(&config, &config.program_name, L"python3");
  if (!PyStatus_Exception(status)) status = PyConfig_SetString(&config, &config.home, L"/");
  if (!PyStatus_Exception(status)) status = PyConfig_SetString(&config, &config.stdio_encoding, L"utf-8");
  if (!PyStatus_Exception(status)) status = PyConfig_SetString(&config, &config.stdio_errors, L"backslashreplace");
  if (PyStatus_Exception(status)) fail_status("configuring the interpreter", status);
  status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status)) fail_status("starting the interpreter", status);

  PyObject *rt = PyImport_ImportModule("_packd_runtime");
  if (rt == NULL) {
    /* _packd_runtime printed the traceback; its words are the load error. */
    PyObject *type, *exc, *tb;
    PyErr_Fetch(&type, &exc, &tb);
    PyErr_NormalizeException(&type, &exc, &tb);
    PyObject *words = exc != NULL ? PyObject_Str(exc) : NULL;
    const char *text = words != NULL ? PyUnicode_AsUTF8(words) : NULL;
    char msg[1024];
    snprintf(msg, sizeof msg, "packd's Python runtime: %s", text != NULL ? text : "loading the pack failed");
    fail(msg);
  }
  call_fn = PyObject_GetAttrString(rt, "call");
  describe_fn = PyObject_GetAttrString(rt, "describe");
  if (call_fn == NULL || describe_fn == NULL) {
    PyErr_Print();
    fail("packd's Python runtime: _packd_runtime lacks call or describe");
  }
  /* What loading left for the collector, collected now and not at a call. */
  PyGC_Collect();
  void *room = malloc(HEAP_HEADROOM);
  free(room);
}

/* answer runs fn (with the request, when there is one) and writes what it
 * returns, (status, bytes), as the call's response. */
static int32_t answer(PyObject *fn, int with_request) {
  PyObject *res;
  if (with_request) {
    int32_t n = kindgi_request_len();
    PyObject *req = PyBytes_FromStringAndSize(NULL, n < 0 ? 0 : n);
    if (req == NULL) {
      PyErr_Clear();
      static const char oom[] = "{\"name\":\"MemoryError\",\"message\":\"the request does not fit in memory\",\"stack\":\"\"}";
      kindgi_response_write(oom, (int32_t)(sizeof oom - 1));
      return 1;
    }
    if (n > 0) kindgi_request_read(PyBytes_AS_STRING(req));
    res = PyObject_CallOneArg(fn, req);
    Py_DECREF(req);
  } else {
    res = PyObject_CallNoArgs(fn);
  }
  long status = -1;
  if (res != NULL && PyTuple_Check(res) && PyTuple_GET_SIZE(res) == 2 && PyLong_Check(PyTuple_GET_ITEM(res, 0)))
    status = PyLong_AsLong(PyTuple_GET_ITEM(res, 0));
  if (status == 2) {
    Py_DECREF(res);
    return 2;
  }
  PyObject *body = res != NULL && PyTuple_Check(res) && PyTuple_GET_SIZE(res) == 2 ? PyTuple_GET_ITEM(res, 1) : NULL;
  if ((status != 0 && status != 1) || body == NULL || !PyBytes_Check(body) || PyBytes_GET_SIZE(body) > INT32_MAX) {
    /* _packd_runtime answers every call itself: this is a runtime bug. */
    PyErr_Clear();
    Py_XDECREF(res);
    static const char bug[] = "{\"name\":\"RuntimeError\",\"message\":\"packd's Python runtime answered no response\",\"stack\":\"\"}";
    kindgi_response_write(bug, (int32_t)(sizeof bug - 1));
    return 1;
  }
  kindgi_response_write(PyBytes_AS_STRING(body), (int32_t)PyBytes_GET_SIZE(body));
  Py_DECREF(res);
  return (int32_t)status;
}

__attribute__((export_name("kindgi_abi_version"))) int32_t kindgi_abi_version(void) { return 1; }

__attribute__((export_name("kindgi_describe"))) int32_t kindgi_describe(void) {
  answer(describe_fn, 0);
  return 0;
}

__attribute__((export_name("kindgi_call"))) int32_t kindgi_call(void) { return answer(call_fn, 1); }
