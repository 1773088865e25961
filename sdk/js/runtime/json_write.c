/* packd's JSON writer (built as one unit with quickjs.c: see json.c).
 *
 * JSON.stringify in QuickJS is generic: per object it makes an array of
 * its keys and looks each one up by name, per array element it makes the
 * index a string, per value it looks for toJSON along the prototype
 * chain, and a cycle is looked for in an array of the objects open. It
 * was two thirds of a pooled echo of structured input (about 1,400 fuel a
 * byte of 64 KiB of small items). packd_json_write writes the same bytes
 * (UTF-8, as runtime.c answers) in one walk over the values, for what an
 * answer is made of nearly always: plain objects (prototype
 * Object.prototype or null; own data properties; no integer keys, whose
 * order is not the shape's) and arrays with no holes, holding strings,
 * numbers, booleans and null. Anything else (a toJSON anywhere, a getter,
 * a class instance, a Proxy, a Date, a Map, a BigInt, a nesting deeper
 * than JSON_MAX_DEPTH, a cycle) makes it answer 0 before it calls any
 * code, and the caller uses JSON.stringify: the bytes are the same
 * either way; only the time differs. */

#define JSON_MAX_DEPTH 1000

/* JSON_KEYS: the keys written last, by atom, as they are written (quoted,
 * with their colon): the objects of a list of records have the same keys,
 * and each is written once and then copied. Atoms are not freed while the
 * writer runs (no JavaScript runs), so an atom names one key throughout. */
#define JSON_KEYS 64
#define JSON_KEY_BYTES 31

typedef struct {
  JSAtom atom;
  uint8_t len;
  char b[JSON_KEY_BYTES];
} JSONKey;

typedef struct {
  char *b;
  size_t n, cap;
  JSObject *object_proto, *array_proto;
  JSONKey keys[JSON_KEYS];
} JSONOut;

static int json_grow_out(JSONOut *o, size_t more);

/* json_room, json_put and json_skipped are inlined: called for every
 * value and every comma, a call each was a tenth of a write. */
static inline __attribute__((always_inline)) int json_room(JSONOut *o, size_t more) {
  return o->n + more <= o->cap || json_grow_out(o, more);
}

static int json_grow_out(JSONOut *o, size_t more) {
  size_t cap = o->cap ? o->cap : 4096;
  while (cap < o->n + more) cap *= 2;
  char *b = realloc(o->b, cap);
  if (!b) return 0;
  o->b = b;
  o->cap = cap;
  return 1;
}

static inline __attribute__((always_inline)) int json_put(JSONOut *o, const char *s, size_t n) {
  if (!json_room(o, n)) return 0;
  memcpy(o->b + o->n, s, n);
  o->n += n;
  return 1;
}

static const char json_hex[] = "0123456789abcdef";

/* json_escape: what JSON.stringify writes for c (< 0x20, '"', '\\', or a
 * lone surrogate), as JS_ToQuotedString does (lower-case \u escapes). */
static int json_escape(JSONOut *o, uint32_t c) {
  char e[6] = {'\\', 0};
  switch (c) {
  case '\t': e[1] = 't'; return json_put(o, e, 2);
  case '\r': e[1] = 'r'; return json_put(o, e, 2);
  case '\n': e[1] = 'n'; return json_put(o, e, 2);
  case '\b': e[1] = 'b'; return json_put(o, e, 2);
  case '\f': e[1] = 'f'; return json_put(o, e, 2);
  case '"': case '\\': e[1] = (char)c; return json_put(o, e, 2);
  }
  e[1] = 'u';
  e[2] = json_hex[(c >> 12) & 15];
  e[3] = json_hex[(c >> 8) & 15];
  e[4] = json_hex[(c >> 4) & 15];
  e[5] = json_hex[c & 15];
  return json_put(o, e, 6);
}

/* json_string writes p quoted, in UTF-8. */
static int json_string(JSONOut *o, const JSString *p) {
  uint32_t len = p->len;
  /* at most 6 bytes an escaped character, 3 a UTF-8 one */
  if (!json_room(o, (size_t)len * 6 + 2)) return 0;
  char *w = o->b + o->n;
  *w++ = '"';
  if (!p->is_wide_char) {
    const uint8_t *s = p->u.str8;
    for (uint32_t i = 0; i < len; i++) {
      uint8_t c = s[i];
      if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
        *w++ = (char)c;
      } else if (c >= 0x80) {
        *w++ = (char)(0xc0 | (c >> 6));
        *w++ = (char)(0x80 | (c & 0x3f));
      } else {
        o->n = (size_t)(w - o->b);
        if (!json_escape(o, c)) return 0;
        w = o->b + o->n;
      }
    }
  } else {
    const uint16_t *s = p->u.str16;
    for (uint32_t i = 0; i < len; i++) {
      uint32_t c = s[i];
      if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
        *w++ = (char)c;
      } else if (c >= 0x80 && c < 0x800) {
        *w++ = (char)(0xc0 | (c >> 6));
        *w++ = (char)(0x80 | (c & 0x3f));
      } else if (c >= 0x800 && (c < 0xd800 || c >= 0xe000)) {
        *w++ = (char)(0xe0 | (c >> 12));
        *w++ = (char)(0x80 | ((c >> 6) & 0x3f));
        *w++ = (char)(0x80 | (c & 0x3f));
      } else if (c >= 0xd800 && c < 0xdc00 && i + 1 < len && s[i + 1] >= 0xdc00 && s[i + 1] < 0xe000) {
        c = 0x10000 + ((c - 0xd800) << 10) + (s[++i] - 0xdc00);
        *w++ = (char)(0xf0 | (c >> 18));
        *w++ = (char)(0x80 | ((c >> 12) & 0x3f));
        *w++ = (char)(0x80 | ((c >> 6) & 0x3f));
        *w++ = (char)(0x80 | (c & 0x3f));
      } else { /* a control character or a lone surrogate */
        o->n = (size_t)(w - o->b);
        if (!json_escape(o, c)) return 0;
        w = o->b + o->n;
      }
    }
  }
  *w++ = '"';
  o->n = (size_t)(w - o->b);
  return 1;
}

static int json_int(JSONOut *o, int64_t v) {
  char buf[24], *e = buf + sizeof buf, *s = e;
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  do {
    *--s = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0) *--s = '-';
  return json_put(o, s, (size_t)(e - s));
}

/* json_short writes d (finite, not an integer) as Number.prototype.toString
 * does when its shortest decimal has few digits and d is not tiny: 0 when
 * it cannot tell (the caller asks js_dtoa1, which is exact and slow: it
 * prints with snprintf, in soft long double arithmetic on wasm32).
 *
 * For k = 1, 2, ... decimal places, r = rint(d * 10^k) is the only
 * k-place decimal that can read back as d while |d * 10^k| < 2^43 (d's
 * rounding interval is then under 2^-10 wide at that scale, and the
 * product is off by less than that); r / 10^k, with both exact, is
 * correctly rounded, so it is d exactly when that decimal reads back as
 * d. The first k that does is the shortest, so the digits
 * Number.prototype.toString picks. Written in fixed notation, as it
 * writes decimals from 10^-6 up to 10^21. */
static int json_short(JSONOut *o, double d) {
  static const double p10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  double a = fabs(d);
  for (int k = 1; k <= 22; k++) {
    double m = a * p10[k];
    if (m >= 8796093022208.0) return 0; /* 2^43 */
    double r = rint(m);
    if (fabs(m - r) > 0.45 || r / p10[k] != a) continue;
    int64_t n = (int64_t)r;
    if (r < p10[k] / 1e6) return 0; /* below 10^-6: written with an exponent */
    char digits[24], *e = digits + sizeof digits, *s = e;
    for (int64_t u = n; u; u /= 10) *--s = (char)('0' + u % 10);
    int len = (int)(e - s);
    char buf[64], *w = buf;
    if (d < 0) *w++ = '-';
    if (len <= k) {
      *w++ = '0';
      *w++ = '.';
      for (int z = len; z < k; z++) *w++ = '0';
      memcpy(w, s, (size_t)len);
      w += len;
    } else {
      memcpy(w, s, (size_t)(len - k));
      w += len - k;
      *w++ = '.';
      memcpy(w, s + len - k, (size_t)k);
      w += k;
    }
    return json_put(o, buf, (size_t)(w - buf)) ? 1 : -1;
  }
  return 0;
}

/* json_number writes d as Number.prototype.toString does (null when it is
 * not finite, as JSON.stringify does). */
static int json_number(JSONOut *o, double d) {
  if (!isfinite(d)) return json_put(o, "null", 4);
  if (d == trunc(d) && fabs(d) < 9007199254740992.0) return json_int(o, (int64_t)d); /* -0 too: "0" */
  int r = json_short(o, d);
  if (r != 0) return r > 0;
  char buf[JS_DTOA_BUF_SIZE];
  js_dtoa1(buf, d, 10, 0, JS_DTOA_VAR_FORMAT);
  return json_put(o, buf, strlen(buf));
}

/* json_skipped: a value JSON.stringify leaves out of an object (and writes
 * as null in an array). */
static inline __attribute__((always_inline)) int json_skipped(JSContext *ctx, JSValueConst v) {
  int tag = JS_VALUE_GET_NORM_TAG(v);
  return tag == JS_TAG_UNDEFINED || tag == JS_TAG_SYMBOL || (tag == JS_TAG_OBJECT && JS_IsFunction(ctx, v));
}

/* json_value writes v; -1: not a value this writer takes, 0: out of memory. */
static int json_value(JSContext *ctx, JSONOut *o, JSValueConst v, int depth) {
  switch (JS_VALUE_GET_NORM_TAG(v)) {
  case JS_TAG_NULL:
    return json_put(o, "null", 4);
  case JS_TAG_BOOL:
    return JS_VALUE_GET_BOOL(v) ? json_put(o, "true", 4) : json_put(o, "false", 5);
  case JS_TAG_INT:
    return json_int(o, JS_VALUE_GET_INT(v));
  case JS_TAG_FLOAT64:
    return json_number(o, JS_VALUE_GET_FLOAT64(v));
  case JS_TAG_STRING:
    return json_string(o, JS_VALUE_GET_STRING(v));
  case JS_TAG_OBJECT:
    break;
  default:
    return -1;
  }
  if (depth >= JSON_MAX_DEPTH) return -1; /* deep, or a cycle */
  JSObject *p = JS_VALUE_GET_OBJ(v);
  JSShape *sh = p->shape;
  if (p->class_id == JS_CLASS_ARRAY) {
    /* no own property but length (no toJSON, nothing a getter holds) */
    if (!p->fast_array || sh->proto != o->array_proto || sh->prop_count != 1 || get_shape_prop(sh)->atom != JS_ATOM_length) return -1;
    uint32_t count = p->u.array.count;
    JSValueConst length = p->prop[0].u.value;
    if (JS_VALUE_GET_TAG(length) != JS_TAG_INT || (uint32_t)JS_VALUE_GET_INT(length) != count) return -1; /* holes at its end */
    if (!json_put(o, "[", 1)) return 0;
    for (uint32_t i = 0; i < count; i++) {
      if (i > 0 && !json_put(o, ",", 1)) return 0;
      JSValueConst e = p->u.array.u.values[i];
      int r = json_skipped(ctx, e) ? json_put(o, "null", 4) : json_value(ctx, o, e, depth + 1);
      if (r <= 0) return r;
    }
    return json_put(o, "]", 1);
  }
  if (p->class_id != JS_CLASS_OBJECT || (sh->proto != o->object_proto && sh->proto != NULL) || sh->has_small_array_index) return -1;
  if (!json_put(o, "{", 1)) return 0;
  JSShapeProperty *prs = get_shape_prop(sh);
  JSAtomStruct **atoms = ctx->rt->atom_array;
  int first = 1;
  for (int i = 0; i < sh->prop_count; i++, prs++) {
    JSAtom atom = prs->atom;
    if (atom == JS_ATOM_NULL) continue; /* deleted */
    if (atom == JS_ATOM_toJSON || (prs->flags & JS_PROP_TMASK) != JS_PROP_NORMAL || __JS_AtomIsTaggedInt(atom)) return -1;
    if (!(prs->flags & JS_PROP_ENUMERABLE)) continue;
    JSONKey *k = &o->keys[atom % JSON_KEYS];
    if (k->atom != atom) { /* a key written before is a string, not an index */
      JSString *key = atoms[atom];
      if (key->atom_type == JS_ATOM_TYPE_SYMBOL) continue;
      uint32_t index;
      if (key->len > 0 && !key->is_wide_char && key->u.str8[0] >= '0' && key->u.str8[0] <= '9' && is_num_string(&index, key))
        return -1; /* an index key: listed first, not in the shape's order */
    }
    JSValueConst e = p->prop[i].u.value;
    if (json_skipped(ctx, e)) continue;
    if (!first && !json_put(o, ",", 1)) return 0;
    first = 0;
    if (k->atom == atom) {
      if (!json_put(o, k->b, k->len)) return 0;
    } else {
      size_t at = o->n;
      if (!json_string(o, atoms[atom]) || !json_put(o, ":", 1)) return 0;
      if (o->n - at <= JSON_KEY_BYTES) { /* kept for the next object with it */
        k->atom = atom;
        k->len = (uint8_t)(o->n - at);
        memcpy(k->b, o->b + at, k->len);
      }
    }
    int r = json_value(ctx, o, e, depth + 1);
    if (r <= 0) return r;
  }
  return json_put(o, "}", 1);
}

/* packd_json_write writes v as JSON.stringify(v) would (undefined as
 * null), into *out (malloc'd, *n bytes): 1 when it did, 0 when v holds
 * something it leaves to JSON.stringify, -1 when memory ran out. */
int packd_json_write(JSContext *ctx, JSValueConst v, char **out, size_t *n) {
  JSONOut o = {0};
  o.object_proto = JS_VALUE_GET_OBJ(ctx->class_proto[JS_CLASS_OBJECT]);
  o.array_proto = JS_VALUE_GET_OBJ(ctx->class_proto[JS_CLASS_ARRAY]);
  /* a toJSON on the prototypes the fast path takes, or an unusual chain
   * above Array.prototype: JSON.stringify. */
  if (find_own_property1(o.object_proto, JS_ATOM_toJSON) || find_own_property1(o.array_proto, JS_ATOM_toJSON) ||
      o.array_proto->shape->proto != o.object_proto || o.object_proto->shape->proto != NULL)
    return 0;
  int r = JS_IsUndefined(v) ? json_put(&o, "null", 4) : json_skipped(ctx, v) ? -1 : json_value(ctx, &o, v, 0);
  if (r <= 0) {
    free(o.b);
    return r < 0 ? 0 : -1;
  }
  *out = o.b;
  *n = o.n;
  return 1;
}
