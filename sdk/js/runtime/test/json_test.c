/* json.c's writer against QuickJS's own JSON.stringify, and its reader
 * against JS_ParseJSON, built natively (make js-json-test).
 *
 * Writer: for every value here it either writes the bytes JSON.stringify
 * writes (as runtime.c answers them: UTF-8) or leaves the value to it; the
 * values plain data is made of must take the fast path. Numbers: a million
 * doubles of every kind against js_dtoa1.
 *
 * Reader (json_read_test.c): for every text, JSON or not, the value it
 * reads is JS_ParseJSON's to the bit and the property's place, or it
 * leaves the text to it; strict JSON must take the fast path. */
#include "../json.c"

static int failures;

static char *js_stringify(JSContext *c, JSValueConst v, size_t *n) {
  JSValue s = JS_JSONStringify(c, v, JS_UNDEFINED, JS_UNDEFINED);
  if (JS_IsException(s)) {
    JS_FreeValue(c, JS_GetException(c));
    return NULL;
  }
  if (JS_IsUndefined(s)) {
    *n = 4;
    return strdup("null");
  }
  const char *p = JS_ToCStringLen(c, n, s);
  char *out = malloc(*n + 1);
  memcpy(out, p, *n + 1);
  JS_FreeCString(c, p);
  JS_FreeValue(c, s);
  return out;
}

/* check: expr's value; fast: the writer must take it (else it may leave
 * it to JSON.stringify, never write other bytes). */
static void check(JSContext *c, const char *expr, int fast) {
  JSValue v = JS_Eval(c, expr, strlen(expr), "<test>", JS_EVAL_TYPE_GLOBAL);
  if (JS_IsException(v)) {
    fprintf(stderr, "FAIL %s: does not evaluate\n", expr);
    failures++;
    return;
  }
  char *got = NULL;
  size_t gotn = 0, wantn = 0;
  int r = packd_json_write(c, v, &got, &gotn);
  char *want = js_stringify(c, v, &wantn);
  if (r == 1 && (!want || gotn != wantn || memcmp(got, want, gotn) != 0)) {
    fprintf(stderr, "FAIL %s:\n  wrote     %.*s\n  stringify %s\n", expr, (int)gotn, got, want ? want : "(throws)");
    failures++;
  } else if (r != 1 && fast) {
    fprintf(stderr, "FAIL %s: left to JSON.stringify (%d)\n", expr, r);
    failures++;
  } else if (r == -1) {
    fprintf(stderr, "FAIL %s: out of memory\n", expr);
    failures++;
  }
  free(got);
  free(want);
  JS_FreeValue(c, v);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t next(void) { /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1du;
}

static double p10_for_test(int k) { return pow(10, k); }

static void check_number(double d) {
  JSONOut o = {0};
  char want[JS_DTOA_BUF_SIZE];
  if (!json_number(&o, d)) abort();
  if (!isfinite(d))
    strcpy(want, "null");
  else
    js_dtoa1(want, d, 10, 0, JS_DTOA_VAR_FORMAT);
  if (o.n != strlen(want) || memcmp(o.b, want, o.n) != 0) {
    if (failures++ < 20) fprintf(stderr, "FAIL %.17g: wrote %.*s, Number.prototype.toString %s\n", d, (int)o.n, o.b, want);
  }
  free(o.b);
}

#include "json_read_test.c"

int main(void) {
  JSRuntime *rt = JS_NewRuntime();
  JSContext *c = JS_NewContext(rt);
  /* plain data: the fast path */
  check(c, "({a: 1, b: 'two', c: [true, false, null], d: {e: 1.5, f: -0, g: 1e21, h: 1e-7, i: 0.000001}})", 1);
  check(c, "JSON.parse('{\"items\":[{\"id\":1,\"name\":\"item 1\",\"tags\":[\"a\",\"b\"],\"ok\":true,\"score\":12.25}]}')", 1);
  check(c, "[]", 1);
  check(c, "({})", 1);
  check(c, "undefined", 1);
  check(c, "null", 1);
  check(c, "'a string'", 1);
  check(c, "12.5", 1);
  check(c, "[NaN, Infinity, -Infinity, 2**53, -(2**53), 2**53 + 2, 123456789012345680000, 0.1 + 0.2]", 1);
  check(c, "['\\u0000\\u0001\\u001f \\\" \\\\ \\b\\f\\n\\r\\t / <>& \\u007f \\u0080 \\u00ff \\u2028 \\u2029']", 1);
  check(c, "['\\ud800', '\\udfff', '\\ud83d\\ude00', 'a\\ud83d', '\\ude00b', '\\ud83d\\ud83d\\ude00', 'é ü 中文 😀']", 1);
  check(c, "({'\\u00e9': 1, 'a\"b': 2, '\\ud800': 3, '中': 4})", 1);
  check(c, "({a: undefined, b: function () {}, c: Symbol('s'), [Symbol('k')]: 1, d: 1})", 1);
  check(c, "[undefined, function () {}, Symbol('s')]", 1);
  check(c, "Object.create(null, {a: {value: 1, enumerable: true}, b: {value: 2, enumerable: false}})", 1);
  check(c, "(() => { const o = {a: 1, b: 2, c: 3}; delete o.b; o.d = 4; return o; })()", 1);
  check(c, "Object.freeze({a: [1, 2, [3]], b: 'c'})", 1);
  check(c, "Object.freeze({a: [1, 2, Object.freeze([3])]})", 0);
  check(c, "(() => { let v = 0; for (let i = 0; i < 900; i++) v = [v]; return v; })()", 1);
  check(c, "({'': 1, ' ': 2, '1a': 3, '01': 4, '-1': 5, '1.5': 6})", 1);
  check(c, "({a: 1, '4294967295': 7})", 0);
  /* left to JSON.stringify, or written the same */
  check(c, "({b: 1, 2: 'two', a: 3, 1: 'one'})", 0);
  check(c, "({a: 1, '4294967294': 2})", 0);
  check(c, "({toJSON() { return 'x'; }})", 0);
  check(c, "({a: {toJSON() { return [1]; }}})", 0);
  check(c, "({get a() { return 1; }, b: 2})", 0);
  check(c, "[1, , 3]", 0);
  check(c, "(() => { const a = [1, 2]; a.length = 5; return a; })()", 0);
  check(c, "(() => { const a = [1, 2]; a.x = 3; return a; })()", 0);
  check(c, "(() => { const a = [1, 2]; a.toJSON = () => 'a'; return a; })()", 0);
  check(c, "new Date(0)", 0);
  check(c, "new Map([[1, 2]])", 0);
  check(c, "[new Number(1), new String('s'), new Boolean(false)]", 0);
  check(c, "new Proxy({a: 1}, {})", 0);
  check(c, "new Proxy([1], {})", 0);
  check(c, "new (class A { constructor() { this.a = 1; } })()", 0);
  check(c, "[1n]", 0);
  check(c, "function f() {}", 0);
  check(c, "(() => { const o = {a: 1}; o.self = o; return o; })()", 0);
  check(c, "(() => { let v = 0; for (let i = 0; i < 5000; i++) v = [v]; return v; })()", 0);
  check(c, "new Uint8Array([1, 2])", 0);
  check(c, "(() => { const e = new Error('x'); e.a = 1; return e; })()", 0);
  check(c, "Object.defineProperty({a: 1}, 'b', {get() { return 2; }, enumerable: true})", 0);
  check(c, "(() => { Object.prototype.toJSON = function () { return 'p'; }; const v = {a: 1}; return v; })()", 0);
  check(c, "(() => { delete Object.prototype.toJSON; Array.prototype.toJSON = function () { return 'p'; }; return [1]; })()", 0);
  check(c, "(() => { delete Array.prototype.toJSON; return [1]; })()", 1);

  /* numbers: every kind of double, against js_dtoa1 */
  static const double special[] = {0.1, 0.2, 0.3, 0.5, 1.5, 12.25, 0.000001, 0.0000011, 0.00000099, 1e-7, 123.456,
                                    5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 9007199254740991.5,
                                    4503599627370495.5, 8796093022207.5, 8796093022208.5, 0.1 + 0.2, 1.0 / 3, 2.0 / 3,
                                    100.0 / 7, 1e20 + 0.5, 999999999999.9999, 0.45, 0.55, 2.675, 1.005, 1e21, 1.5e21};
  for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) {
    check_number(special[i]);
    check_number(-special[i]);
  }
  for (int i = 0; i < 1000000; i++) {
    uint64_t x = next();
    double d;
    switch (i % 5) {
    case 0: /* any bits */
      memcpy(&d, &x, 8);
      break;
    case 1: /* a short decimal */
      d = (double)(int64_t)(x % 2000000001 - 1000000000) / p10_for_test((int)(x >> 40) % 12);
      break;
    case 2: /* a fraction */
      d = (double)(x % 100000) / (double)((x >> 32) % 997 + 1);
      break;
    case 3: /* around the thresholds */
      d = ldexp((double)(x % 1000000 + 1), (int)((x >> 32) % 120) - 90);
      break;
    default: /* a decimal of many digits */
      d = (double)(x % 100000000000000000u) / p10_for_test((int)(x >> 57) % 23);
      break;
    }
    check_number(d);
  }
  int read = reader_tests(c);
  /* What the writer and the reader hold they give back: QuickJS asserts
   * that no object or shape is left when its runtime is freed. */
  JS_FreeContext(c);
  JS_FreeRuntime(rt);
  if (failures) {
    fprintf(stderr, "%d failures\n", failures);
    return 1;
  }
  printf("json.c: the writer writes what JSON.stringify writes; the reader reads what JS_ParseJSON reads (%d texts)\n", read);
  return 0;
}
