/* kindgi_test.c: the C SDK's reader and writer, built and run natively
 * (make test). */
#define KINDGI_IMPLEMENTATION
#include "../kindgi.h"

static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { failures++; fprintf(stderr, "%s:%d: ", __FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

static kindgi_json J(const char *s) { return (kindgi_json){s, strlen(s)}; }

static int out_is(kindgi_out *o, const char *want) {
    int same = o->n == strlen(want) && !memcmp(o->b, want, o->n);
    if (!same) fprintf(stderr, "wrote %.*s, want %s\n", (int)o->n, o->b, want);
    free(o->b);
    *o = (kindgi_out){0};
    o->first = 1;
    return same;
}

int main(void) {
    kindgi_json doc = J(" {\"a\" : [1, -2.5e3, \"x\\\"y\", true, null, {}], \"s\":\"h\\u00e9llo \\ud83d\\ude00\\n\", \"a\":{\"k\":false}, \"e\":\"\\ud800\"} ");
    kindgi_json obj = {doc.p + 1, doc.n - 2};

    /* kindgi_get: the last of duplicate keys; absent keys */
    kindgi_json a = kindgi_get(obj, "a");
    CHECK(kindgi_type(a) == KINDGI_OBJECT, "duplicate a: type %d", kindgi_type(a));
    int b = 1;
    CHECK(kindgi_bool(kindgi_get(a, "k"), &b) && b == 0, "a.k");
    CHECK(kindgi_type(kindgi_get(obj, "missing")) == KINDGI_ABSENT, "missing key");
    CHECK(kindgi_type(kindgi_get(J("[1]"), "a")) == KINDGI_ABSENT, "get on an array");

    /* strings: escapes, \\u pairs, lone surrogates */
    size_t n;
    char *s = kindgi_string(kindgi_get(obj, "s"), &n);
    CHECK(s && n == strlen("h\xC3\xA9llo \xF0\x9F\x98\x80\n") && !strcmp(s, "h\xC3\xA9llo \xF0\x9F\x98\x80\n"), "unescaped %s", s ? s : "(null)");
    free(s);
    s = kindgi_string(kindgi_get(obj, "e"), NULL);
    CHECK(s && !strcmp(s, "\xEF\xBF\xBD"), "a lone surrogate is U+FFFD");
    free(s);
    CHECK(kindgi_string(J("5"), NULL) == NULL, "a number is not a string");
    CHECK(kindgi_string_is(J("\"a\\/b\""), "a/b"), "string_is with an escape");

    /* walking an array */
    kindgi_json first = kindgi_get(J("{\"a\":[1, -2.5e3, \"x\\\"y\", true, null, {}]}"), "a");
    size_t pos = 0;
    kindgi_json key, v;
    int count = 0;
    double d;
    enum kindgi_type types[] = {KINDGI_NUMBER, KINDGI_NUMBER, KINDGI_STRING, KINDGI_BOOL, KINDGI_NULL, KINDGI_OBJECT};
    while (kindgi_next(first, &pos, &key, &v)) {
        CHECK(count < 6 && kindgi_type(v) == types[count], "element %d type %d", count, kindgi_type(v));
        CHECK(key.p == NULL, "an array element has no key");
        count++;
    }
    CHECK(count == 6, "%d elements", count);
    pos = 0;
    kindgi_next(first, &pos, NULL, &v);
    kindgi_next(first, &pos, NULL, &v);
    CHECK(kindgi_number(v, &d) && d == -2500, "number %g", d);
    pos = 0;
    CHECK(!kindgi_next(J("[]"), &pos, NULL, &v) && !kindgi_next(J("{ }"), &pos, NULL, &v), "empty containers");

    /* malformed JSON is never read past its end */
    pos = 0;
    CHECK(!kindgi_next(J("[1,"), &pos, NULL, &v) || !kindgi_next(J("[1,"), &pos, NULL, &v), "a truncated array ends");
    CHECK(kindgi_type(kindgi_get(J("{\"a\":"), "a")) == KINDGI_ABSENT, "a truncated member");
    CHECK(kindgi_type(kindgi_get(J("{\"a\":\"unterminated}"), "a")) == KINDGI_ABSENT, "an unterminated string");
    CHECK(kindgi_type(kindgi_get(J("{\"a\":\"x\\"), "a")) == KINDGI_ABSENT, "a string ending in a backslash");
    /* long strings are skipped 8 bytes a step: a quote, a backslash or a
     * control byte is found at every offset, and never past the end */
    for (int at = 0; at < 40; at++) {
        char buf[64];
        memset(buf, 'a', sizeof buf);
        buf[0] = '"';
        buf[1 + at] = '"';
        kindgi_json s = {buf, (size_t)(2 + at)};
        CHECK(kindgi_type(s) == KINDGI_STRING && kindgi_skip_(buf, buf + s.n, 0) == buf + s.n, "a string closed at %d", at);
        CHECK(kindgi_skip_(buf, buf + 1 + at, 0) == NULL, "a string cut at %d is not read past its end", at);
        buf[1 + at] = '\\';
        buf[2 + at] = '"';
        buf[3 + at] = '"';
        CHECK(kindgi_skip_(buf, buf + 4 + at, 0) == buf + 4 + at, "an escaped quote at %d", at);
        buf[1 + at] = '\x01';
        CHECK(kindgi_skip_(buf, buf + 4 + at, 0) == NULL, "a control byte at %d", at);
        buf[1 + at] = (char)0xC3;
        buf[2 + at] = (char)0xA9;
        CHECK(kindgi_skip_(buf, buf + 4 + at, 0) == buf + 4 + at, "UTF-8 at %d", at);
    }
    CHECK(kindgi_key_is_(J("\"kind\""), "kind") && !kindgi_key_is_(J("\"kin\""), "kind") &&
          kindgi_key_is_(J("\"k\\u0069nd\""), "kind") && !kindgi_key_is_(J("\"kinds\""), "kind"), "keys, escaped or not");
    char deep[2000];
    memset(deep, '[', sizeof deep);
    pos = 0;
    CHECK(!kindgi_next((kindgi_json){deep, sizeof deep}, &pos, NULL, &v), "nesting past the limit");

    /* writing */
    kindgi_out o = {0};
    o.first = 1;
    kindgi_begin_object(&o);
    kindgi_key(&o, "s");
    kindgi_write_cstring(&o, "q\"\\\n\x01\xC3\xA9");
    kindgi_key(&o, "n");
    kindgi_write_number(&o, 1.5);
    kindgi_key(&o, "i");
    kindgi_write_number(&o, 42);
    kindgi_key(&o, "big");
    kindgi_write_int(&o, -9007199254740993LL);
    kindgi_key(&o, "nan");
    kindgi_write_number(&o, 0.0 / 0.0);
    kindgi_key(&o, "l");
    kindgi_begin_array(&o);
    kindgi_write_bool(&o, 1);
    kindgi_write_null(&o);
    kindgi_begin_object(&o);
    kindgi_end_object(&o);
    kindgi_write_json(&o, J("[1,{\"a\":2}]"));
    kindgi_end_array(&o);
    kindgi_end_object(&o);
    CHECK(out_is(&o, "{\"s\":\"q\\\"\\\\\\n\\u0001\xC3\xA9\",\"n\":1.5,\"i\":42,\"big\":-9007199254740993,\"nan\":null,\"l\":[true,null,{},[1,{\"a\":2}]]}"), "an object");

    kindgi_write_cstring(&o, "partial");
    CHECK(kindgi_throw(&o, "RangeError", "too far") == KINDGI_THROWN && o.thrown, "throw");
    CHECK(out_is(&o, "{\"name\":\"RangeError\",\"message\":\"too far\",\"stack\":\"RangeError: too far\"}"), "a throw replaces what was written");

    /* kindgi_http: a refusal, then a response with headers and a body */
    kindgi_http_response r;
    CHECK(kindgi_http(NULL, "http://x/", NULL, NULL, 0, &r) == -1, "a refused request returns -1");
    CHECK(r.status == 0 && r.error_reason && !strcmp(r.error_reason, "network-not-allowed") && r.error_message && !strcmp(r.error_message, "outside packd"), "the refusal's reason and message");
    kindgi_http_free(&r);
    kindgi_test_http_answer = "{\"status\":201,\"headers\":{\"X-A\":[\"1\"]},\"bodyLength\":5}";
    kindgi_test_http_body = "hello";
    CHECK(kindgi_http("POST", "http://x/", "{\"X-B\":[\"2\"]}", "in", 2, &r) == 0, "a response returns 0");
    CHECK(r.status == 201 && r.body_len == 5 && !strcmp(r.body, "hello") && !r.error_reason, "status %d, body %s", r.status, r.body);
    size_t hp = 0;
    kindgi_json hk, hv;
    CHECK(kindgi_next(kindgi_get(r.headers, "X-A"), &hp, &hk, &hv) && kindgi_string_is(hv, "1"), "the header X-A");
    kindgi_http_free(&r);

    if (failures) {
        fprintf(stderr, "kindgi_test: %d failure(s)\n", failures);
        return 1;
    }
    printf("kindgi_test: ok\n");
    return 0;
}
