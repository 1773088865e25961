/* The reader's half of json_test.c (included there): packd_json_parse
 * against JS_ParseJSON on texts written here and on random ones, whole,
 * cut short and with a byte changed. */

/* same: a and b are the same value as QuickJS holds it: the same tag, a
 * number to the bit, a string's code units and width, an object's class,
 * prototype, and its properties in the same places with the same flags. */
static int same(JSValueConst a, JSValueConst b) {
  int tag = JS_VALUE_GET_NORM_TAG(a);
  if (tag != JS_VALUE_GET_NORM_TAG(b)) return 0;
  switch (tag) {
  case JS_TAG_INT:
  case JS_TAG_BOOL: return JS_VALUE_GET_INT(a) == JS_VALUE_GET_INT(b);
  case JS_TAG_NULL: return 1;
  case JS_TAG_FLOAT64: {
    double x = JS_VALUE_GET_FLOAT64(a), y = JS_VALUE_GET_FLOAT64(b);
    return memcmp(&x, &y, sizeof x) == 0;
  }
  case JS_TAG_STRING: {
    JSString *x = JS_VALUE_GET_STRING(a), *y = JS_VALUE_GET_STRING(b);
    if (x->len != y->len || x->is_wide_char != y->is_wide_char) return 0;
    return memcmp(x->u.str8, y->u.str8, (size_t)x->len << x->is_wide_char) == 0;
  }
  case JS_TAG_OBJECT: {
    JSObject *x = JS_VALUE_GET_OBJ(a), *y = JS_VALUE_GET_OBJ(b);
    if (x->class_id != y->class_id || x->shape->proto != y->shape->proto || x->fast_array != y->fast_array ||
        x->extensible != y->extensible || x->shape->prop_count != y->shape->prop_count)
      return 0;
    JSShapeProperty *px = get_shape_prop(x->shape), *py = get_shape_prop(y->shape);
    for (int i = 0; i < x->shape->prop_count; i++)
      if (px[i].atom != py[i].atom || px[i].flags != py[i].flags || !same(x->prop[i].u.value, y->prop[i].u.value)) return 0;
    if (x->fast_array) {
      if (x->u.array.count != y->u.array.count) return 0;
      for (uint32_t i = 0; i < x->u.array.count; i++)
        if (!same(x->u.array.u.values[i], y->u.array.u.values[i])) return 0;
    }
    return 1;
  }
  default: return 0;
  }
}

static char *exception_message(JSContext *c) {
  JSValue e = JS_GetException(c);
  const char *m = JS_ToCString(c, e);
  char *out = strdup(m ? m : "?");
  JS_FreeCString(c, m);
  JS_FreeValue(c, e);
  return out;
}

static int n_fast;

/* check_read: packd_json_parse reads text as JS_ParseJSON does; strict:
 * the text is JSON the reader must take itself. */
static void check_read(JSContext *c, const char *text, size_t n, int strict) {
  char *buf = malloc(n + 1);
  memcpy(buf, text, n);
  buf[n] = 0;
  JSONIn in = {c, json_ws((const uint8_t *)buf)};
  JSValue fast = json_read_value(&in);
  json_read_end(&in);
  int took = !JS_IsException(fast) && json_ws(in.p) == (const uint8_t *)buf + n;
  JS_FreeValue(c, fast);
  JS_FreeValue(c, JS_GetException(c));
  n_fast += took;
  JSValue got = packd_json_parse(c, buf, n, "<t>");
  char *got_err = JS_IsException(got) ? exception_message(c) : NULL;
  JSValue want = JS_ParseJSON(c, buf, n, "<t>");
  char *want_err = JS_IsException(want) ? exception_message(c) : NULL;
  const char *wrong = NULL;
  if (strict && !took)
    wrong = "left to JS_ParseJSON";
  else if (!got_err != !want_err)
    wrong = got_err ? "refused what JS_ParseJSON reads" : "read what JS_ParseJSON refuses";
  else if (got_err && strcmp(got_err, want_err) != 0)
    wrong = "another error";
  else if (!got_err && !same(got, want))
    wrong = "another value";
  if (wrong && failures++ < 20) {
    fprintf(stderr, "FAIL read %s (%zu bytes:", wrong, n);
    for (size_t i = 0; i < n && i < 64; i++) fprintf(stderr, " %02x", (uint8_t)buf[i]);
    fprintf(stderr, "%s)\n  got %s, JS_ParseJSON %s\n", n > 64 ? " ..." : "", got_err ? got_err : "a value",
            want_err ? want_err : "a value");
  }
  free(got_err);
  free(want_err);
  JS_FreeValue(c, got);
  JS_FreeValue(c, want);
  free(buf);
}

#define READ(text, strict) check_read(c, text, sizeof(text) - 1, strict)

/* A random text: gen writes a value into b (at most depth deep); strict
 * keeps it to JSON the reader takes. */
typedef struct {
  char *b;
  size_t n, cap;
} Text;

static void put(Text *t, const char *s, size_t n) {
  if (t->n + n + 1 > t->cap) {
    t->cap = (t->n + n + 1) * 2;
    t->b = realloc(t->b, t->cap);
  }
  memcpy(t->b + t->n, s, n);
  t->n += n;
}
static void PUTS(Text *t, const char *s) { put(t, s, strlen(s)); }

static const char *const strict_numbers[] = {
    "0", "-0", "1", "-1", "12", "2147483647", "2147483648", "-2147483648", "-2147483649", "4294967296",
    "9007199254740993", "123456789012345678", "999999999999999999", "1234567890123456789", "18446744073709551616",
    "123456789012345678901234567890", "0.0", "-0.0", "0.5", "12.25", "0.1", "0.30000000000000004", "1e0", "1E+2",
    "1e-7", "2.5e-3", "123456789012345e22", "1234567890123456e22", "1e22", "1e23", "1e-22", "1e-23", "5e-324",
    "2e-324", "1.7976931348623157e308", "1e309", "-1e309", "1e-400", "1e99999", "0.000001", "100.0", "1.000",
    "3.141592653589793", "2.718281828459045e-10", "9007199254740991.5", "0e5", "-0e-5", "0.0000000000000000000000001",
    "1.5e+10", "4.35", "0.1e1", "123.456e-2"};
static const char *const loose_numbers[] = {"01", "-01", "1.", ".5", "+1", "-", "1e", "1e+", "Infinity", "-Infinity",
                                            "NaN", "0x10", "1_000", "1.e5", "00", "-.5", "1e5.5", "0b1", "1n"};
static const char *const strict_strings[] = {
    "\"\"", "\"a\"", "\"item 12\"", "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\u0041\\u00e9\\u00E9\\u4e2d\"",
    "\"\\ud83d\\ude00\"", "\"\\ud800\"", "\"\\udfff x\"", "\"\\u0000\"", "\"é\"", "\"中文\"", "\"😀\"",
    "\"a\\nb é \\u2028 ok\"", "\"\xed\xa0\x80\"", "\"\x7f\""};
static const char *const loose_strings[] = {"\"\\'\"", "\"\\x41\"", "\"\\v\"", "\"\\0\"", "\"\\u12\"", "\"\\u{41}\"",
                                            "\"\x01\"", "\"\n\"", "\"\xff\"", "\"\xc3\"", "\"\xc0\x80\"", "\"\\\n\"",
                                            "'a'", "\"\\a\"", "\"\xf8\x88\x80\x80\x80\""};
static const char *const keys[] = {"\"a\"", "\"b\"", "\"id\"", "\"\"", "\"0\"", "\"1\"", "\"01\"", "\"4294967294\"",
                                   "\"4294967295\"", "\"__proto__\"", "\"constructor\"", "\"length\"", "\"é\"",
                                   "\"a\\u0062\"", "\"\\ud800\"", "\"toString\""};
static const char *const spaces[] = {"", "", "", " ", "\n", "\t", "\r\n  "};
static const char *const loose_spaces[] = {"\f", "\v", "\xc2\xa0", "/**/", "//\n"};

#define PICK(a) a[next() % (sizeof a / sizeof a[0])]

static void gen(Text *t, int depth, int strict) {
  int k = (int)(next() % 16);
  if (depth <= 0 && k < 6) k = 6 + k;
  PUTS(t, PICK(spaces));
  if (!strict && next() % 40 == 0) PUTS(t, PICK(loose_spaces));
  switch (k) {
  case 0: case 1: case 2: { /* an object */
    PUTS(t, "{");
    int n = (int)(next() % 6);
    for (int i = 0; i < n; i++) {
      if (i) PUTS(t, ",");
      PUTS(t, PICK(spaces));
      PUTS(t, !strict && next() % 30 == 0 ? "a" : PICK(keys));
      PUTS(t, PICK(spaces));
      PUTS(t, ":");
      gen(t, depth - 1, strict);
    }
    if (!strict && n && next() % 20 == 0) PUTS(t, ",");
    PUTS(t, PICK(spaces));
    PUTS(t, "}");
    break;
  }
  case 3: case 4: case 5: { /* an array */
    PUTS(t, "[");
    int n = (int)(next() % 6);
    for (int i = 0; i < n; i++) {
      if (i) PUTS(t, ",");
      gen(t, depth - 1, strict);
    }
    if (!strict && n && next() % 20 == 0) PUTS(t, ",");
    PUTS(t, PICK(spaces));
    PUTS(t, "]");
    break;
  }
  case 6: case 7: case 8:
    PUTS(t, !strict && next() % 10 == 0 ? PICK(loose_numbers) : PICK(strict_numbers));
    break;
  case 9: { /* a number of random digits */
    char num[80];
    int m = snprintf(num, sizeof num, "%s%llu", next() % 2 ? "-" : "", (unsigned long long)(next() >> (next() % 64)));
    if (next() % 2) m += snprintf(num + m, sizeof num - m, ".%0*llu", (int)(next() % 20) + 1, (unsigned long long)(next() % 100000000000));
    if (next() % 2) snprintf(num + m, sizeof num - m, "e%d", (int)(next() % 700) - 350);
    PUTS(t, num);
    break;
  }
  case 10: case 11: case 12:
    PUTS(t, !strict && next() % 10 == 0 ? PICK(loose_strings) : PICK(strict_strings));
    break;
  case 13: PUTS(t, "true"); break;
  case 14: PUTS(t, "false"); break;
  default: PUTS(t, !strict && next() % 10 == 0 ? "nul" : "null"); break;
  }
  PUTS(t, PICK(spaces));
}

static int reader_tests(JSContext *c) {
  int atoms = c->rt->atom_count; /* a key's atom is freed with the last object holding it */
  READ("{\"items\":[{\"id\":1,\"name\":\"item 1\",\"tags\":[\"a\",\"b\"],\"ok\":true,\"score\":12.25}]}", 1);
  READ("  {\"a\" : 1 , \"b\":[ ] ,\"c\":{ }}\n", 1);
  READ("{\"a\":1,\"b\":2,\"a\":3}", 1);                       /* a key twice: its first place, its last value */
  READ("{\"__proto__\":{\"x\":1},\"y\":2}", 1);               /* an own property, not the prototype */
  READ("{\"1\":\"one\",\"b\":2,\"0\":\"zero\",\"4294967295\":3}", 1);
  READ("[[[[[[[[[[1]]]]]]]]]]", 1);
  /* records of one shape (made with it at once), and others near it */
  READ("[{\"a\":1,\"b\":2},{\"a\":3,\"b\":4},{\"b\":5,\"a\":6},{\"a\":7,\"b\":8,\"a\":9},{\"a\":1},"
       "{\"a\":1,\"b\":2,\"c\":3},{\"a\":{\"a\":1,\"b\":2},\"b\":[{\"a\":0,\"b\":[]}]},{\"a\":1,\"b\":2}]", 1);
  READ("\"\\ud83d\\ude00\\ud83d\"", 1);
  READ("-0", 1);
  READ("", 0);
  READ("   ", 0);
  READ("{", 0);
  READ("[1,]", 0);
  READ("{\"a\":1,}", 0);
  READ("[1 2]", 0);
  READ("{\"a\" 1}", 0);
  READ("{a:1}", 0);
  READ("truex", 0);
  READ("[tru]", 0);
  READ("1 2", 0);
  READ("\"abc", 0);
  READ("\"\\u00\"", 0);
  READ("[1]\0", 0);
  READ("[\"a\0b\"]", 0);
  for (size_t i = 0; i < sizeof strict_numbers / sizeof strict_numbers[0]; i++)
    check_read(c, strict_numbers[i], strlen(strict_numbers[i]), 1);
  for (size_t i = 0; i < sizeof loose_numbers / sizeof loose_numbers[0]; i++)
    check_read(c, loose_numbers[i], strlen(loose_numbers[i]), 0);
  for (size_t i = 0; i < sizeof strict_strings / sizeof strict_strings[0]; i++)
    check_read(c, strict_strings[i], strlen(strict_strings[i]), 1);
  for (size_t i = 0; i < sizeof loose_strings / sizeof loose_strings[0]; i++)
    check_read(c, loose_strings[i], strlen(loose_strings[i]), 0);
  /* as deep as the reader goes, and past it (JS_ParseJSON's) */
  for (int depth = JSON_READ_MAX_DEPTH - 1; depth <= JSON_READ_MAX_DEPTH + 1; depth++) {
    Text t = {0};
    for (int i = 0; i < depth; i++) PUTS(&t, i % 2 ? "[" : "{\"a\":");
    PUTS(&t, "1");
    for (int i = depth - 1; i >= 0; i--) PUTS(&t, i % 2 ? "]" : "}");
    check_read(c, t.b, t.n, depth <= JSON_READ_MAX_DEPTH);
    free(t.b);
  }
  int texts = 0;
  for (int i = 0; i < 20000; i++, texts++) {
    Text t = {0};
    int strict = i % 2;
    gen(&t, (int)(next() % 6), strict);
    check_read(c, t.b, t.n, strict);
    if (strict && t.n > 1) { /* cut short, and a byte changed */
      size_t cut = next() % t.n;
      check_read(c, t.b, cut, 0);
      static const char bytes[] = "{}[],:\"\\ 0123456789.eE+-tfnu\x80\xc3\x01";
      t.b[next() % t.n] = bytes[next() % (sizeof bytes - 1)];
      check_read(c, t.b, t.n, 0);
      texts += 2;
    }
    free(t.b);
  }
  JS_RunGC(c->rt);
  if (c->rt->atom_count != atoms) {
    fprintf(stderr, "FAIL %d atoms before the texts were read, %d after\n", atoms, c->rt->atom_count);
    failures++;
  }
  if (n_fast < texts / 3) {
    fprintf(stderr, "FAIL the reader took %d of %d texts\n", n_fast, texts);
    failures++;
  }
  return texts;
}
