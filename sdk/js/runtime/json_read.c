/* packd's JSON reader (built as one unit with quickjs.c: see json.c).
 *
 * JS_ParseJSON goes through QuickJS's JavaScript tokenizer: per string a
 * StringBuffer, per key a string made then looked up as an atom, per
 * property the generic JS_DefinePropertyValue, per array element an index
 * turned into a property key, per number a copy into a buffer and strtod
 * (in wasm, soft long double). It was most of a pooled echo of structured
 * input (some 770 of 870 fuel a byte of 64 KiB of small items).
 *
 * packd_json_parse builds the same values in one walk over the bytes, for
 * strict JSON: keys looked up as atoms straight from the bytes (first in
 * the last shape made at their depth), ASCII strings copied as they are,
 * an object or an array made once its members are read (an object of a
 * shape seen before with that shape at once, an array of its length),
 * numbers of up to 15 significant digits made by one exact multiplication
 * or division (Clinger's fast path; correctly rounded as strtod is). Anything else (an input that is
 * not JSON, one QuickJS reads beyond JSON, a number past the fast path
 * that is not an integer of up to 18 digits, a nesting deeper than
 * JSON_READ_MAX_DEPTH, out of memory) makes it free what it built and
 * call JS_ParseJSON: the value, or the error, is the same either way;
 * only the time differs. */

#define JSON_READ_MAX_DEPTH 256

/* JSON_SHAPES: the shapes of the objects read last, by their first key
 * and size: an object with the keys of one of them, in its order, is made
 * with its shape at once (as many objects of one shape are, in a list of
 * records) instead of adding its properties one by one. */
#define JSON_SHAPES 32
/* JSON_STRINGS: the short strings read last, by their bytes: a string
 * read again (a tag, an enum's value, a flag's name) is the same string,
 * shared, as it may be: a string is a value. */
#define JSON_STRINGS 64
#define JSON_STRING_SHORT 16

typedef struct {
  JSContext *ctx;
  const uint8_t *p;
  int depth, deepest;
  /* The values (and the objects' keys) read but not yet in the array or
   * object open around them: an array or an object is made once, of its
   * size. */
  JSValue *vals;
  JSAtom *keys;
  uint32_t nvals, nkeys, capvals, capkeys;
  JSShape *shapes[JSON_SHAPES];
  /* last[d]: the shape of the last object made at depth d; the keys of
   * the next one there are looked for in it before the atom table. */
  JSShape *last[JSON_READ_MAX_DEPTH + 1];
  JSValue strings[JSON_STRINGS];
} JSONIn;

/* json_plain[c]: c may stand in a string as it is, in an ASCII string
 * with no escapes (not '"', '\\', a control character or past 0x7f).
 * (A GNU range, then two that override it: clang's -w keeps quiet.) */
static const uint8_t json_plain[256] = {[0x20 ... 0x7f] = 1, ['"'] = 0, ['\\'] = 0};

static inline const uint8_t *json_ws(const uint8_t *p) {
  while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t') p++;
  return p;
}

static const double json_p10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                    1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                    1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static inline int json_digit(int c) { return c >= '0' && c <= '9'; }

/* json_read_number: the number at in->p (a '-' or a digit), as js_atof
 * makes it; JS_EXCEPTION if the reader does not take it. */
static JSValue json_read_number(JSONIn *in) {
  const uint8_t *s = in->p, *p = s;
  int neg = *p == '-';
  p += neg;
  uint64_t m = 0;
  int digits = 0, frac = 0, exp = 0, is_float = 0;
  if (*p == '0') {
    p++;
    if (json_digit(*p)) return JS_EXCEPTION; /* a leading zero: not JSON */
  } else if (json_digit(*p)) {
    for (; json_digit(*p); p++, digits++) m = m * 10 + (*p - '0'); /* 19+ digits: past the paths below */
  } else {
    return JS_EXCEPTION;
  }
  if (*p == '.') {
    is_float = 1;
    p++;
    if (!json_digit(*p)) return JS_EXCEPTION;
    for (; json_digit(*p); p++, frac++) {
      if (m || *p != '0') digits++;
      m = m * 10 + (*p - '0');
    }
  }
  if (*p == 'e' || *p == 'E') {
    is_float = 1;
    p++;
    int eneg = *p == '-';
    if (*p == '-' || *p == '+') p++;
    if (!json_digit(*p)) return JS_EXCEPTION;
    for (; json_digit(*p); p++)
      if (exp < 10000) exp = exp * 10 + (*p - '0'); /* far past the fast path: js_atof's */
    if (eneg) exp = -exp;
  }
  in->p = p;
  double d;
  if (!is_float && digits <= 18) {
    d = (double)m; /* js_strtod's integer path: exact below 2^53, rounded once above */
  } else if (is_float && digits <= 15 && exp - frac >= -22 && exp - frac <= 22) {
    int e = exp - frac; /* m < 10^15 < 2^53 and 10^|e| are exact: one rounding, strtod's */
    d = e >= 0 ? (double)m * json_p10[e] : (double)m / json_p10[-e];
  } else {
    const char *end;
    JSValue v = js_atof(in->ctx, (const char *)s, &end, 10, 0);
    if ((const uint8_t *)end != p) {
      JS_FreeValue(in->ctx, v);
      return JS_EXCEPTION;
    }
    return v;
  }
  return JS_NewFloat64(in->ctx, neg ? -d : d);
}

/* json_read_escaped: the rest of a string from s, whose first run of
 * plain bytes ends at p, with escapes or bytes past 0x7f, as
 * js_parse_string reads it; leaves in->p after the closing quote. */
static JSValue json_read_escaped(JSONIn *in, const uint8_t *s, const uint8_t *p) {
  StringBuffer b;
  if (string_buffer_init(in->ctx, &b, (int)(p - s) + 16)) return JS_EXCEPTION;
  if (string_buffer_write8(&b, s, (int)(p - s))) goto fail;
  for (;;) {
    uint32_t c = *p;
    if (c == '"') break;
    if (c == '\\') {
      switch (p[1]) {
      case '"': case '\\': case '/': c = p[1]; break;
      case 'b': c = '\b'; break;
      case 'f': c = '\f'; break;
      case 'n': c = '\n'; break;
      case 'r': c = '\r'; break;
      case 't': c = '\t'; break;
      case 'u':
        c = 0;
        for (int i = 2; i < 6; i++) {
          int h = from_hex(p[i]);
          if (h < 0) goto fail;
          c = c << 4 | h;
        }
        p += 4;
        break;
      default: goto fail; /* what JSON has no escape for: JS_ParseJSON's */
      }
      p += 2;
    } else if (c >= 0x80) {
      const uint8_t *next;
      c = unicode_from_utf8(p, UTF8_CHAR_LEN_MAX, &next);
      if (c > 0x10FFFF) goto fail;
      p = next;
    } else if (c < 0x20) {
      goto fail;
    } else {
      const uint8_t *run = p;
      while (json_plain[*p]) p++;
      if (string_buffer_write8(&b, run, (int)(p - run))) goto fail;
      continue;
    }
    if (string_buffer_putc(&b, c)) goto fail;
  }
  in->p = p + 1;
  return string_buffer_end(&b);
fail:
  string_buffer_free(&b);
  return JS_EXCEPTION;
}

/* json_read_string: the string whose opening quote is at in->p. */
/* json_same: whether a and b hold the same n bytes, eight at a time
 * (memcmp is a call and a byte at a time; most keys and short strings are
 * a word or two). */
static inline __attribute__((always_inline)) int json_same(const uint8_t *a, const uint8_t *b, size_t n) {
  for (; n >= 8; n -= 8, a += 8, b += 8) {
    uint64_t x, y;
    memcpy(&x, a, 8);
    memcpy(&y, b, 8);
    if (x != y) return 0;
  }
  while (n--)
    if (*a++ != *b++) return 0;
  return 1;
}

static JSValue json_read_string(JSONIn *in) {
  const uint8_t *s = in->p + 1, *p = s;
  while (json_plain[*p]) p++;
  if (*p != '"') return json_read_escaped(in, s, p);
  in->p = p + 1;
  int n = (int)(p - s);
  if (n == 0 || n > JSON_STRING_SHORT) return js_new_string8(in->ctx, s, n);
  JSValue *slot = &in->strings[(n * 31 + s[0] * 7 + s[n - 1]) % JSON_STRINGS];
  if (JS_VALUE_GET_TAG(*slot) == JS_TAG_STRING) {
    JSString *had = JS_VALUE_GET_STRING(*slot);
    if (had->len == (uint32_t)n && !had->is_wide_char && json_same(had->u.str8, s, (size_t)n)) return JS_DupValue(in->ctx, *slot);
  }
  JSValue v = js_new_string8(in->ctx, s, n);
  if (JS_IsException(v)) return v;
  JS_FreeValue(in->ctx, *slot);
  *slot = JS_DupValue(in->ctx, v);
  return v;
}

/* json_read_key: the key whose opening quote is at in->p, as an atom
 * (JS_ATOM_NULL if the reader does not take it); like: the atom the key
 * is likely to be (the same key of the last object made at this depth),
 * or JS_ATOM_NULL. */
static JSAtom json_read_key(JSONIn *in, JSAtom like) {
  const uint8_t *s = in->p + 1, *p = s;
  while (json_plain[*p]) p++;
  if (*p == '"') {
    in->p = p + 1;
    size_t n = (size_t)(p - s);
    if (like != JS_ATOM_NULL && !__JS_AtomIsTaggedInt(like)) {
      JSAtomStruct *a = in->ctx->rt->atom_array[like];
      if (a->len == n && !a->is_wide_char && json_same(a->u.str8, s, n)) return JS_DupAtom(in->ctx, like);
    }
    return JS_NewAtomLen(in->ctx, (const char *)s, n);
  }
  JSValue v = json_read_escaped(in, s, p);
  if (JS_IsException(v)) return JS_ATOM_NULL;
  JSAtom a = JS_ValueToAtom(in->ctx, v);
  JS_FreeValue(in->ctx, v);
  return a;
}

static JSValue json_read_value(JSONIn *in);

/* json_grow makes room for one more element of size bytes in *buf (of
 * *cap, first at the start); 0 if out of memory. */
static int json_grow(JSContext *ctx, void **buf, uint32_t *cap, size_t size, uint32_t first) {
  uint32_t c = *cap ? *cap * 2 : first;
  void *b = js_realloc(ctx, *buf, size * c);
  if (!b) return 0;
  *buf = b;
  *cap = c;
  return 1;
}

/* json_push: v onto the pending values; 0 if out of memory (v freed). */
static inline __attribute__((always_inline)) int json_push(JSONIn *in, JSValue v) {
  if (in->nvals == in->capvals && !json_grow(in->ctx, (void **)&in->vals, &in->capvals, sizeof(JSValue), 256)) {
    JS_FreeValue(in->ctx, v);
    return 0;
  }
  in->vals[in->nvals++] = v;
  return 1;
}

/* json_push_key: key onto the pending keys; 0 if out of memory (key
 * freed). */
static inline __attribute__((always_inline)) int json_push_key(JSONIn *in, JSAtom key) {
  if (in->nkeys == in->capkeys && !json_grow(in->ctx, (void **)&in->keys, &in->capkeys, sizeof(JSAtom), 64)) {
    JS_FreeAtom(in->ctx, key);
    return 0;
  }
  in->keys[in->nkeys++] = key;
  return 1;
}

/* json_drop: frees the pending values and keys past vbase and kbase. */
static void json_drop(JSONIn *in, uint32_t vbase, uint32_t kbase) {
  while (in->nvals > vbase) JS_FreeValue(in->ctx, in->vals[--in->nvals]);
  while (in->nkeys > kbase) JS_FreeAtom(in->ctx, in->keys[--in->nkeys]);
}

/* json_remember keeps sh in *slot (a reference of its own). */
static void json_remember(JSContext *ctx, JSShape **slot, JSShape *sh) {
  if (*slot == sh) return;
  if (*slot) js_free_shape(ctx->rt, *slot);
  *slot = js_dup_shape(sh);
}

/* json_make_object: the object of the n pending keys and values from
 * vbase and kbase, which it takes. A key given twice keeps its first
 * place and takes the later value, as JS_DefinePropertyValue does. */
static JSValue json_make_object(JSONIn *in, uint32_t vbase, uint32_t kbase, uint32_t n) {
  JSContext *ctx = in->ctx;
  JSValue *vals = in->vals + vbase;
  JSAtom *keys = in->keys + kbase;
  JSShape **slot = &in->shapes[(keys[0] * 7 + n) % JSON_SHAPES], **last = &in->last[in->depth];
  JSShape *sh = *last && (*last)->prop_count == (int)n ? *last : *slot;
  if (sh && sh->prop_count == (int)n) {
    JSShapeProperty *prs = get_shape_prop(sh);
    uint32_t i = 0;
    while (i < n && prs[i].atom == keys[i]) i++;
    if (i == n) {
      JSValue obj = JS_NewObjectFromShape(ctx, js_dup_shape(sh), JS_CLASS_OBJECT);
      if (JS_IsException(obj)) return obj;
      JSObject *o = JS_VALUE_GET_OBJ(obj);
      for (i = 0; i < n; i++) {
        o->prop[i].u.value = vals[i];
        JS_FreeAtom(ctx, keys[i]);
      }
      in->nvals = vbase;
      in->nkeys = kbase;
      json_remember(ctx, last, sh);
      return obj;
    }
  }
  JSValue obj = JS_NewObject(ctx);
  if (JS_IsException(obj)) return obj;
  JSObject *o = JS_VALUE_GET_OBJ(obj);
  for (uint32_t i = 0; i < n; i++) {
    JSProperty *pr;
    if (find_own_property(&pr, o, keys[i])) {
      set_value(ctx, &pr->u.value, vals[i]);
    } else if ((pr = add_property(ctx, o, keys[i], JS_PROP_C_W_E))) {
      pr->u.value = vals[i];
    } else {
      JS_FreeValue(ctx, obj);
      return JS_EXCEPTION; /* the rest the caller frees */
    }
    vals[i] = JS_UNDEFINED;
  }
  json_drop(in, vbase, kbase);
  if (o->shape->prop_count == (int)n && o->shape->is_hashed) {
    json_remember(ctx, slot, o->shape);
    json_remember(ctx, last, o->shape);
  }
  return obj;
}

/* json_read_object: the object whose '{' is at in->p. */
static JSValue json_read_object(JSONIn *in) {
  uint32_t vbase = in->nvals, kbase = in->nkeys;
  const uint8_t *p = json_ws(in->p + 1);
  if (*p == '}') {
    in->p = p + 1;
    return JS_NewObject(in->ctx);
  }
  for (;;) {
    if (*p != '"') goto fail;
    in->p = p;
    JSShape *like = in->last[in->depth];
    uint32_t i = in->nkeys - kbase;
    JSAtom key = json_read_key(in, like && i < (uint32_t)like->prop_count ? get_shape_prop(like)[i].atom : JS_ATOM_NULL);
    if (key == JS_ATOM_NULL || !json_push_key(in, key)) goto fail;
    p = json_ws(in->p);
    if (*p != ':') goto fail;
    in->p = json_ws(p + 1);
    JSValue v = json_read_value(in);
    if (JS_IsException(v) || !json_push(in, v)) goto fail;
    p = json_ws(in->p);
    if (*p == ',') {
      p = json_ws(p + 1);
      continue;
    }
    if (*p != '}') goto fail;
    in->p = p + 1;
    JSValue obj = json_make_object(in, vbase, kbase, in->nvals - vbase);
    if (JS_IsException(obj)) goto fail;
    return obj;
  }
fail:
  json_drop(in, vbase, kbase);
  return JS_EXCEPTION;
}

/* json_read_array: the array whose '[' is at in->p, a fast array made
 * once, of its length. */
static JSValue json_read_array(JSONIn *in) {
  JSContext *ctx = in->ctx;
  uint32_t vbase = in->nvals;
  const uint8_t *p = json_ws(in->p + 1);
  if (*p != ']') {
    for (;;) {
      in->p = p;
      JSValue v = json_read_value(in);
      if (JS_IsException(v) || !json_push(in, v)) goto fail;
      p = json_ws(in->p);
      if (*p == ',') {
        p = json_ws(p + 1);
        continue;
      }
      if (*p != ']') goto fail;
      break;
    }
  }
  in->p = p + 1;
  JSValue arr = JS_NewArray(ctx);
  if (JS_IsException(arr)) goto fail;
  uint32_t n = in->nvals - vbase;
  if (n) {
    JSObject *a = JS_VALUE_GET_OBJ(arr);
    if (expand_fast_array(ctx, a, n)) {
      JS_FreeValue(ctx, arr);
      goto fail;
    }
    memcpy(a->u.array.u.values, in->vals + vbase, sizeof(JSValue) * n);
    a->u.array.count = n;
    a->prop[0].u.value = JS_NewInt32(ctx, (int32_t)n);
    in->nvals = vbase;
  }
  return arr;
fail:
  json_drop(in, vbase, in->nkeys);
  return JS_EXCEPTION;
}

/* json_read_value: the value at in->p (no whitespace before it). */
static JSValue json_read_value(JSONIn *in) {
  const uint8_t *p = in->p;
  JSValue v;
  switch (*p) {
  case '"': return json_read_string(in);
  case '{':
  case '[':
    if (++in->depth > JSON_READ_MAX_DEPTH) return JS_EXCEPTION;
    if (in->depth > in->deepest) in->deepest = in->depth;
    v = *p == '{' ? json_read_object(in) : json_read_array(in);
    in->depth--;
    return v;
  case 't':
    if (p[1] != 'r' || p[2] != 'u' || p[3] != 'e') return JS_EXCEPTION;
    in->p = p + 4;
    return JS_TRUE;
  case 'f':
    if (p[1] != 'a' || p[2] != 'l' || p[3] != 's' || p[4] != 'e') return JS_EXCEPTION;
    in->p = p + 5;
    return JS_FALSE;
  case 'n':
    if (p[1] != 'u' || p[2] != 'l' || p[3] != 'l') return JS_EXCEPTION;
    in->p = p + 4;
    return JS_NULL;
  default: return json_read_number(in);
  }
}

/* json_read_end frees what the reader kept (nothing is pending once the
 * value is read, or given up). */
static void json_read_end(JSONIn *in) {
  json_drop(in, 0, 0);
  js_free(in->ctx, in->vals);
  js_free(in->ctx, in->keys);
  for (int i = 0; i < JSON_SHAPES; i++)
    if (in->shapes[i]) js_free_shape(in->ctx->rt, in->shapes[i]);
  for (int i = 1; i <= in->deepest; i++)
    if (in->last[i]) js_free_shape(in->ctx->rt, in->last[i]);
  for (int i = 0; i < JSON_STRINGS; i++) JS_FreeValue(in->ctx, in->strings[i]);
}

/* packd_json_parse is JS_ParseJSON (buf[len] must be 0, as there): the
 * same value or the same exception, in one walk when it can. */
JSValue packd_json_parse(JSContext *ctx, const char *buf, size_t len, const char *filename) {
  JSONIn in = {ctx, json_ws((const uint8_t *)buf)};
  JSValue v = json_read_value(&in);
  json_read_end(&in);
  if (!JS_IsException(v)) {
    if (json_ws(in.p) == (const uint8_t *)buf + len) return v;
    JS_FreeValue(ctx, v);
  }
  JS_FreeValue(ctx, JS_GetException(ctx)); /* out of memory, say: JS_ParseJSON meets it again */
  return JS_ParseJSON(ctx, buf, len, filename);
}
