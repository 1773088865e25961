/*
 * kindgi.h: packd's C SDK, guest ABI v1 (abi/GUEST-ABI.md), in one header.
 *
 * A pack is one .c file that defines its handlers and two tables, and
 * includes this header after defining KINDGI_IMPLEMENTATION:
 *
 *     #define KINDGI_IMPLEMENTATION
 *     #include "kindgi.h"
 *
 *     static int greet(kindgi_json input, kindgi_json ctx, kindgi_out *out) {
 *         char *name = kindgi_string(kindgi_get(input, "name"), NULL);
 *         if (!name) return kindgi_throw(out, "TypeError", "name is not a string");
 *         kindgi_begin_object(out);
 *         kindgi_key(out, "greeting");
 *         kindgi_write_cstring(out, name);
 *         kindgi_end_object(out);
 *         free(name);
 *         return KINDGI_OK;
 *     }
 *
 *     const kindgi_tool kindgi_tools[] = {{"hello.greet", greet}, {0}};
 *     const kindgi_check kindgi_checks[] = {{0}};
 *
 * Build it as a WASI reactor (a module without main, whose _initialize runs
 * once), with Debian's clang, lld, wasi-libc and libclang-rt-14-dev-wasm32:
 *
 *     clang --target=wasm32-wasi -mexec-model=reactor -mbulk-memory -O2 -o pack.wasm pack.c
 *
 * Without -mexec-model=reactor the link fails with `undefined symbol: main`;
 * -mbulk-memory makes memcpy and memset single instructions, not loops.
 *
 * Reading: a kindgi_json is the text of one JSON value inside the request
 * (nothing is copied or allocated until asked). kindgi_get finds an object
 * member, kindgi_next walks an object's members or an array's elements, and
 * kindgi_string, kindgi_number and kindgi_bool read scalars. Writing: the
 * handler writes its output (any JSON value) to out with the kindgi_write_*
 * functions, or throws with kindgi_throw. stdout and stderr (printf) become
 * the call's output lines. Everything the handler allocated is gone with
 * the call's instance.
 *
 * Outbound HTTP: kindgi_http sends one request through packd, which sends
 * it only where the tool's network policy in the index allows (see
 * docs/index-format.md, "network"); a refused or failed request returns -1
 * with the reason, which the handler may handle:
 *
 *     kindgi_http_response r;
 *     if (kindgi_http("GET", "https://api.example.com/v1/x", NULL, NULL, 0, &r) != 0) {
 *         ... r.error_reason, e.g. "host-not-allowed" ...
 *     }
 *     ... r.status, r.body, r.body_len, kindgi_get(r.headers, "Content-Type") ...
 *     kindgi_http_free(&r);
 */
#ifndef KINDGI_H
#define KINDGI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KINDGI_ABI_VERSION 1

/* A JSON value's text; p == NULL when the value is absent. */
typedef struct {
    const char *p;
    size_t n;
} kindgi_json;

enum kindgi_type {
    KINDGI_ABSENT, KINDGI_NULL, KINDGI_BOOL, KINDGI_NUMBER,
    KINDGI_STRING, KINDGI_ARRAY, KINDGI_OBJECT
};

/* The type of a value (KINDGI_ABSENT for a missing one). */
enum kindgi_type kindgi_type(kindgi_json v);
/* The value of an object's member (the last of duplicates), or absent. */
kindgi_json kindgi_get(kindgi_json object, const char *key);
/* Walks an object's members (key and value) or an array's elements
 * (value; key absent): *pos starts at 0; returns 0 after the last. */
int kindgi_next(kindgi_json container, size_t *pos, kindgi_json *key, kindgi_json *value);
/* A string's UTF-8 bytes, unescaped, NUL-terminated, malloc'd (its length
 * in *len when len is not NULL); NULL when v is not a string. */
char *kindgi_string(kindgi_json v, size_t *len);
/* Whether v is the string s (unescaped). */
int kindgi_string_is(kindgi_json v, const char *s);
/* A number's value; 0 when v is not a number. */
int kindgi_number(kindgi_json v, double *out);
/* A boolean's value; 0 when v is not a boolean. */
int kindgi_bool(kindgi_json v, int *out);

/* What a handler writes: one JSON value. */
typedef struct {
    char *b;
    size_t n, cap;
    int first;   /* no member or element yet in the innermost container */
    int after_key;
    int thrown;
} kindgi_out;

void kindgi_begin_object(kindgi_out *o);
void kindgi_end_object(kindgi_out *o);
void kindgi_begin_array(kindgi_out *o);
void kindgi_end_array(kindgi_out *o);
void kindgi_key(kindgi_out *o, const char *key);
void kindgi_write_string(kindgi_out *o, const char *s, size_t n);
void kindgi_write_cstring(kindgi_out *o, const char *s);
void kindgi_write_number(kindgi_out *o, double v);
void kindgi_write_int(kindgi_out *o, long long v);
void kindgi_write_bool(kindgi_out *o, int v);
void kindgi_write_null(kindgi_out *o);
/* Writes a value read from the request as it is. */
void kindgi_write_json(kindgi_out *o, kindgi_json v);

#define KINDGI_OK 0
#define KINDGI_THROWN 1
/* Throws: the call answers handler-throw with this name and message.
 * Returns KINDGI_THROWN, for `return kindgi_throw(...)`. */
int kindgi_throw(kindgi_out *o, const char *name, const char *message);

/* Log levels of kindgi_log. */
enum { KINDGI_DEBUG, KINDGI_INFO, KINDGI_WARN, KINDGI_ERROR };
/* Writes a line to packd's records, at a level. */
void kindgi_log(int level, const char *message);

/* An outbound HTTP response, or why there is none. */
typedef struct {
    int status;                /* the response's status; 0 when there is none */
    kindgi_json headers;       /* an object: each header name and its values (an array) */
    char *body;                /* the body, body_len bytes and a NUL (malloc'd) */
    size_t body_len;
    char *error_reason;        /* NULL, or why there is no response (abi/GUEST-ABI.md) */
    char *error_message;       /* NULL, or the same in words */
    char *answer_;             /* packd's answer, which headers points into */
} kindgi_http_response;

/* Sends one request through packd: method (NULL: GET), an absolute http
 * or https URL, headers as a JSON object of names and arrays of values
 * (NULL: none), and a body (NULL or body_len bytes). Returns 0 with a
 * response, or -1 with error_reason and error_message set. Free the
 * response with kindgi_http_free either way. */
int kindgi_http(const char *method, const char *url, const char *headers_json,
                const void *body, size_t body_len, kindgi_http_response *out);
void kindgi_http_free(kindgi_http_response *r);

typedef int (*kindgi_tool_fn)(kindgi_json input, kindgi_json ctx, kindgi_out *out);
typedef int (*kindgi_check_fn)(kindgi_json config, kindgi_json trace, kindgi_out *out);

/* A tool: its id and handler, and, for `packd index`, its index entry
 * (all optional: what is NULL, packd index keeps from the index; schemas,
 * limits, network and kindgi's effects, mutating, needs and needs_spec as
 * JSON text, see docs/index-format.md). mutating "false" makes packd refuse
 * the tool's writes. */
typedef struct {
    const char *id;
    kindgi_tool_fn fn;
    const char *version, *description, *input_schema, *output_schema;
    const char *limits, *network;
    const char *effects, *mutating, *needs, *needs_spec, *sandbox;
} kindgi_tool;

/* A guardrail check: its id and handler, and for `packd index` its entry:
 * kind (when neither this nor the index says, "zero-llm"), action (JSON;
 * else {"on-violation":"halt"}), config schema, the guardrail's id when it
 * is not the check id, severity, limits and network; and the guardrail's
 * name, scope (JSON) and sandbox. */
typedef struct {
    const char *id;
    kindgi_check_fn fn;
    const char *kind, *action, *config_schema;
    const char *guardrail, *severity, *limits, *network;
    const char *name, *scope, *sandbox;
} kindgi_check;

/* The environment names the pack reads with getenv, for the index's env:
 * define KINDGI_ENV before including the implementation, as the JSON of
 * an object {"required": [...], "optional": [...]}. */

/* The pack defines both tables, each ended by an entry of zeros. */
extern const kindgi_tool kindgi_tools[];
extern const kindgi_check kindgi_checks[];

#ifdef KINDGI_IMPLEMENTATION

#ifdef __wasm__
#define KINDGI_IMPORT(name) __attribute__((import_module("kindgi"), import_name(name)))
KINDGI_IMPORT("request_len") int32_t kindgi_request_len_(void);
KINDGI_IMPORT("request_read") void kindgi_request_read_(void *ptr);
KINDGI_IMPORT("response_write") void kindgi_response_write_(const void *ptr, int32_t len);
KINDGI_IMPORT("log") void kindgi_log_(int32_t level, const void *ptr, int32_t len);
KINDGI_IMPORT("http_request") int64_t kindgi_http_request_(const void *head, int32_t head_len, const void *body, int32_t body_len);
KINDGI_IMPORT("http_response_read") void kindgi_http_response_read_(void *head, void *body);
#else
/* Built natively (the SDK's own tests): logs go to stderr, and the
 * network answers what KINDGI_TEST_HTTP_ANSWER and _BODY say. */
static void kindgi_log_(int32_t level, const void *ptr, int32_t len) {
    fprintf(stderr, "log %d: %.*s\n", (int)level, (int)len, (const char *)ptr);
}
static const char *kindgi_test_http_answer = "{\"bodyLength\":0,\"error\":{\"reason\":\"network-not-allowed\",\"message\":\"outside packd\"}}";
static const char *kindgi_test_http_body = "";
static int64_t kindgi_http_request_(const void *head, int32_t head_len, const void *body, int32_t body_len) {
    (void)head; (void)head_len; (void)body; (void)body_len;
    return (int64_t)strlen(kindgi_test_http_answer) | (int64_t)strlen(kindgi_test_http_body) << 32;
}
static void kindgi_http_response_read_(void *head, void *body) {
    memcpy(head, kindgi_test_http_answer, strlen(kindgi_test_http_answer));
    memcpy(body, kindgi_test_http_body, strlen(kindgi_test_http_body));
}
#endif

/* ---- reading ---- */

static const char *kindgi_ws_(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* kindgi_plain8_ reports whether none of the 8 bytes at p ends or escapes
 * a string: no '"', no '\\', none below 0x20 (each test has no false
 * negatives; a false positive only sends the bytes to the byte loop). */
static int kindgi_plain8_(const char *p) {
    uint64_t x;
    memcpy(&x, p, 8);
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
    return !((((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((b - ones) & ~b)) & highs);
}

/* kindgi_skip_ returns the end of the value at p (after whitespace), or
 * NULL when it is not valid JSON. */
static const char *kindgi_skip_(const char *p, const char *end, int depth) {
    p = kindgi_ws_(p, end);
    if (p >= end || depth > 512) return NULL;
    switch (*p) {
    case '"':
        for (p++; p < end; p++) {
            while (end - p >= 8 && kindgi_plain8_(p)) p += 8; /* a long string, 8 bytes a step */
            if (p >= end) break;
            if (*p == '\\') { p++; continue; }
            if (*p == '"') return p + 1;
            if ((unsigned char)*p < 0x20) return NULL;
        }
        return NULL;
    case '{': case '[': {
        char close = *p == '{' ? '}' : ']';
        p = kindgi_ws_(p + 1, end);
        if (p < end && *p == close) return p + 1;
        for (;;) {
            if (close == '}') {
                p = kindgi_ws_(p, end);
                if (p >= end || *p != '"') return NULL;
                p = kindgi_skip_(p, end, depth + 1);
                if (!p) return NULL;
                p = kindgi_ws_(p, end);
                if (p >= end || *p != ':') return NULL;
                p++;
            }
            p = kindgi_skip_(p, end, depth + 1);
            if (!p) return NULL;
            p = kindgi_ws_(p, end);
            if (p < end && *p == ',') { p++; continue; }
            if (p < end && *p == close) return p + 1;
            return NULL;
        }
    }
    case 't': return end - p >= 4 && !memcmp(p, "true", 4) ? p + 4 : NULL;
    case 'f': return end - p >= 5 && !memcmp(p, "false", 5) ? p + 5 : NULL;
    case 'n': return end - p >= 4 && !memcmp(p, "null", 4) ? p + 4 : NULL;
    default: {
        const char *s = p;
        if (p < end && *p == '-') p++;
        if (p >= end || *p < '0' || *p > '9') return NULL;
        while (p < end && ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E' || *p == '+' || *p == '-')) p++;
        return p > s ? p : NULL;
    }
    }
}

enum kindgi_type kindgi_type(kindgi_json v) {
    if (!v.p || !v.n) return KINDGI_ABSENT;
    switch (*v.p) {
    case 'n': return KINDGI_NULL;
    case 't': case 'f': return KINDGI_BOOL;
    case '"': return KINDGI_STRING;
    case '[': return KINDGI_ARRAY;
    case '{': return KINDGI_OBJECT;
    default: return KINDGI_NUMBER;
    }
}

int kindgi_next(kindgi_json c, size_t *pos, kindgi_json *key, kindgi_json *value) {
    enum kindgi_type t = kindgi_type(c);
    if (t != KINDGI_OBJECT && t != KINDGI_ARRAY) return 0;
    const char *end = c.p + c.n, *p = c.p + (*pos ? *pos : 1);
    p = kindgi_ws_(p, end);
    if (p < end && *p == ',') p = kindgi_ws_(p + 1, end);
    if (p >= end || *p == '}' || *p == ']') return 0;
    kindgi_json k = {0, 0};
    if (t == KINDGI_OBJECT) {
        const char *ke = kindgi_skip_(p, end, 1);
        if (!ke) return 0;
        k.p = p; k.n = (size_t)(ke - p);
        p = kindgi_ws_(ke, end);
        if (p >= end || *p != ':') return 0;
        p = kindgi_ws_(p + 1, end);
    }
    const char *ve = kindgi_skip_(p, end, 1);
    if (!ve) return 0;
    if (key) *key = k;
    if (value) { value->p = p; value->n = (size_t)(ve - p); }
    *pos = (size_t)(ve - c.p);
    return 1;
}

static void kindgi_utf8_(char *out, size_t *n, uint32_t r) {
    if (r < 0x80) out[(*n)++] = (char)r;
    else if (r < 0x800) { out[(*n)++] = (char)(0xC0 | r >> 6); out[(*n)++] = (char)(0x80 | (r & 0x3F)); }
    else if (r < 0x10000) {
        out[(*n)++] = (char)(0xE0 | r >> 12); out[(*n)++] = (char)(0x80 | (r >> 6 & 0x3F));
        out[(*n)++] = (char)(0x80 | (r & 0x3F));
    } else {
        out[(*n)++] = (char)(0xF0 | r >> 18); out[(*n)++] = (char)(0x80 | (r >> 12 & 0x3F));
        out[(*n)++] = (char)(0x80 | (r >> 6 & 0x3F)); out[(*n)++] = (char)(0x80 | (r & 0x3F));
    }
}

static int kindgi_hex4_(const char *p, uint32_t *v) {
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        *v <<= 4;
        if (c >= '0' && c <= '9') *v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') *v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') *v |= (uint32_t)(c - 'A' + 10);
        else return 0;
    }
    return 1;
}

char *kindgi_string(kindgi_json v, size_t *len) {
    if (kindgi_type(v) != KINDGI_STRING || v.n < 2) return NULL;
    const char *p = v.p + 1, *end = v.p + v.n - 1;
    char *out = malloc(v.n + 1); /* unescaping never grows a string */
    if (!out) return NULL;
    size_t n = 0;
    while (p < end) {
        if (*p != '\\') { out[n++] = *p++; continue; }
        if (++p >= end) break;
        char e = *p++;
        switch (e) {
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
            uint32_t r, lo;
            if (end - p < 4 || !kindgi_hex4_(p, &r)) { free(out); return NULL; }
            p += 4;
            if (r >= 0xD800 && r < 0xDC00 && end - p >= 6 && p[0] == '\\' && p[1] == 'u' &&
                kindgi_hex4_(p + 2, &lo) && lo >= 0xDC00 && lo < 0xE000) {
                r = 0x10000 + ((r - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            } else if (r >= 0xD800 && r < 0xE000) {
                r = 0xFFFD; /* a lone surrogate */
            }
            kindgi_utf8_(out, &n, r);
            break;
        }
        default: out[n++] = e; /* \" \\ \/ */
        }
    }
    out[n] = 0;
    if (len) *len = n;
    return out;
}

int kindgi_string_is(kindgi_json v, const char *s) {
    size_t n;
    char *got = kindgi_string(v, &n);
    int same = got && n == strlen(s) && !memcmp(got, s, n);
    free(got);
    return same;
}

/* kindgi_key_is_ is kindgi_string_is for a member's key, without a copy
 * when the key has no escapes (as nearly every key). */
static int kindgi_key_is_(kindgi_json k, const char *s) {
    if (k.n < 2 || memchr(k.p, '\\', k.n)) return kindgi_string_is(k, s);
    size_t n = strlen(s);
    return k.n - 2 == n && !memcmp(k.p + 1, s, n);
}

kindgi_json kindgi_get(kindgi_json obj, const char *key) {
    kindgi_json k, v, found = {0, 0};
    size_t pos = 0;
    if (kindgi_type(obj) != KINDGI_OBJECT) return found;
    while (kindgi_next(obj, &pos, &k, &v)) {
        if (kindgi_key_is_(k, key)) found = v;
    }
    return found;
}

int kindgi_number(kindgi_json v, double *out) {
    if (kindgi_type(v) != KINDGI_NUMBER) return 0;
    char buf[64];
    if (v.n >= sizeof buf) return 0;
    memcpy(buf, v.p, v.n);
    buf[v.n] = 0;
    *out = strtod(buf, NULL);
    return 1;
}

int kindgi_bool(kindgi_json v, int *out) {
    if (kindgi_type(v) != KINDGI_BOOL) return 0;
    *out = *v.p == 't';
    return 1;
}

/* ---- writing ---- */

static void kindgi_put_(kindgi_out *o, const char *s, size_t n) {
    if (o->n + n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap : 256;
        while (cap < o->n + n + 1) cap *= 2;
        char *b = realloc(o->b, cap);
        if (!b) abort(); /* out of memory: the call traps */
        o->b = b;
        o->cap = cap;
    }
    memcpy(o->b + o->n, s, n);
    o->n += n;
}

/* kindgi_sep_ writes the comma before a value, unless it follows a key. */
static void kindgi_sep_(kindgi_out *o) {
    if (o->after_key) { o->after_key = 0; return; }
    if (!o->first) kindgi_put_(o, ",", 1);
    o->first = 0;
}

void kindgi_begin_object(kindgi_out *o) { kindgi_sep_(o); kindgi_put_(o, "{", 1); o->first = 1; }
void kindgi_end_object(kindgi_out *o) { kindgi_put_(o, "}", 1); o->first = 0; }
void kindgi_begin_array(kindgi_out *o) { kindgi_sep_(o); kindgi_put_(o, "[", 1); o->first = 1; }
void kindgi_end_array(kindgi_out *o) { kindgi_put_(o, "]", 1); o->first = 0; }

static void kindgi_quote_(kindgi_out *o, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    kindgi_put_(o, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') { char e[2] = {'\\', (char)c}; kindgi_put_(o, e, 2); }
        else if (c == '\n') kindgi_put_(o, "\\n", 2);
        else if (c == '\r') kindgi_put_(o, "\\r", 2);
        else if (c == '\t') kindgi_put_(o, "\\t", 2);
        else if (c < 0x20) { char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]}; kindgi_put_(o, e, 6); }
        else kindgi_put_(o, (const char *)&s[i], 1);
    }
    kindgi_put_(o, "\"", 1);
}

void kindgi_key(kindgi_out *o, const char *key) {
    kindgi_sep_(o);
    kindgi_quote_(o, key, strlen(key));
    kindgi_put_(o, ":", 1);
    o->after_key = 1;
}

void kindgi_write_string(kindgi_out *o, const char *s, size_t n) { kindgi_sep_(o); kindgi_quote_(o, s, n); }
void kindgi_write_cstring(kindgi_out *o, const char *s) { kindgi_write_string(o, s, strlen(s)); }

void kindgi_write_number(kindgi_out *o, double v) {
    char buf[32];
    if (v != v || v - v != 0) { kindgi_write_null(o); return; } /* NaN and infinities: null, as JSON.stringify */
    int n = v == (double)(long long)v && v > -9007199254740992.0 && v < 9007199254740992.0
                ? snprintf(buf, sizeof buf, "%lld", (long long)v)
                : snprintf(buf, sizeof buf, "%.17g", v);
    kindgi_sep_(o);
    kindgi_put_(o, buf, (size_t)n);
}

void kindgi_write_int(kindgi_out *o, long long v) {
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%lld", v);
    kindgi_sep_(o);
    kindgi_put_(o, buf, (size_t)n);
}

void kindgi_write_bool(kindgi_out *o, int v) { kindgi_sep_(o); kindgi_put_(o, v ? "true" : "false", v ? 4 : 5); }
void kindgi_write_null(kindgi_out *o) { kindgi_sep_(o); kindgi_put_(o, "null", 4); }

void kindgi_write_json(kindgi_out *o, kindgi_json v) {
    if (!v.p) { kindgi_write_null(o); return; }
    kindgi_sep_(o);
    kindgi_put_(o, v.p, v.n);
}

int kindgi_throw(kindgi_out *o, const char *name, const char *message) {
    o->n = 0;
    o->first = 1;
    o->after_key = 0;
    o->thrown = 1;
    size_t nn = strlen(name), mn = strlen(message);
    char *stack = malloc(nn + mn + 3);
    if (!stack) abort();
    memcpy(stack, name, nn);
    memcpy(stack + nn, ": ", 2);
    memcpy(stack + nn + 2, message, mn + 1);
    kindgi_begin_object(o);
    kindgi_key(o, "name"); kindgi_write_cstring(o, name);
    kindgi_key(o, "message"); kindgi_write_cstring(o, message);
    kindgi_key(o, "stack"); kindgi_write_cstring(o, stack);
    kindgi_end_object(o);
    free(stack);
    return KINDGI_THROWN;
}

void kindgi_log(int level, const char *message) { kindgi_log_(level, message, (int32_t)strlen(message)); }

/* ---- outbound HTTP ---- */

int kindgi_http(const char *method, const char *url, const char *headers_json,
                const void *body, size_t body_len, kindgi_http_response *out) {
    memset(out, 0, sizeof *out);
    kindgi_out h = {0};
    h.first = 1;
    kindgi_begin_object(&h);
    kindgi_key(&h, "method"); kindgi_write_cstring(&h, method ? method : "GET");
    kindgi_key(&h, "url"); kindgi_write_cstring(&h, url);
    if (headers_json) {
        kindgi_key(&h, "headers");
        kindgi_write_json(&h, (kindgi_json){headers_json, strlen(headers_json)});
    }
    kindgi_end_object(&h);
    int64_t lens = kindgi_http_request_(h.b, (int32_t)h.n, body, (int32_t)body_len);
    free(h.b);
    size_t alen = (size_t)(uint32_t)lens, blen = (size_t)(uint32_t)(lens >> 32);
    out->answer_ = malloc(alen + 1);
    out->body = malloc(blen + 1);
    if (!out->answer_ || !out->body) abort();
    kindgi_http_response_read_(out->answer_, out->body);
    out->answer_[alen] = 0;
    out->body[blen] = 0;
    out->body_len = blen;
    kindgi_json a = {out->answer_, alen};
    kindgi_json err = kindgi_get(a, "error");
    if (err.p) {
        out->error_reason = kindgi_string(kindgi_get(err, "reason"), NULL);
        out->error_message = kindgi_string(kindgi_get(err, "message"), NULL);
        if (!out->error_reason) out->error_reason = kindgi_string((kindgi_json){"\"failed\"", 8}, NULL);
        return -1;
    }
    double status = 0;
    kindgi_number(kindgi_get(a, "status"), &status);
    out->status = (int)status;
    out->headers = kindgi_get(a, "headers");
    return 0;
}

void kindgi_http_free(kindgi_http_response *r) {
    free(r->body);
    free(r->error_reason);
    free(r->error_message);
    free(r->answer_);
    memset(r, 0, sizeof *r);
}

/* ---- the exports ---- */
#ifdef __wasm__

/* Heap headroom. A wasm memory never shrinks, and packd closes a pooled
 * instance whose call grew its memory instead of resetting it, so every
 * call that needed a little more heap than the snapshot had paid for a new
 * instance. At start-up (in _initialize, before packd takes the snapshot)
 * the SDK has malloc take KINDGI_HEAP_HEADROOM bytes from the host and
 * gives them back to the heap: a call that allocates less than that keeps
 * its instance. The pages cost nothing until written. Define
 * KINDGI_HEAP_HEADROOM before the implementation to change it (0: none). */
#ifndef KINDGI_HEAP_HEADROOM
#define KINDGI_HEAP_HEADROOM (4 << 20)
#endif
__attribute__((constructor)) static void kindgi_reserve_heap_(void) {
    if (KINDGI_HEAP_HEADROOM > 0) {
        void *volatile p = malloc(KINDGI_HEAP_HEADROOM); /* volatile: kept */
        free(p);
    }
}

__attribute__((export_name("kindgi_abi_version"))) int32_t kindgi_abi_version(void) { return KINDGI_ABI_VERSION; }

static void kindgi_raw_member_(kindgi_out *o, const char *key, const char *json) {
    if (!json) return;
    kindgi_key(o, key);
    kindgi_write_json(o, (kindgi_json){json, strlen(json)});
}

static void kindgi_str_member_(kindgi_out *o, const char *key, const char *s) {
    if (!s) return;
    kindgi_key(o, key);
    kindgi_write_cstring(o, s);
}

__attribute__((export_name("kindgi_describe"))) int32_t kindgi_describe(void) {
    kindgi_out o = {0};
    o.first = 1;
    kindgi_begin_object(&o);
    kindgi_key(&o, "tools");
    kindgi_begin_array(&o);
    for (const kindgi_tool *t = kindgi_tools; t->id; t++) kindgi_write_cstring(&o, t->id);
    kindgi_end_array(&o);
    kindgi_key(&o, "checks");
    kindgi_begin_array(&o);
    for (const kindgi_check *c = kindgi_checks; c->id; c++) kindgi_write_cstring(&o, c->id);
    kindgi_end_array(&o);
    kindgi_key(&o, "toolSpecs");
    kindgi_begin_array(&o);
    for (const kindgi_tool *t = kindgi_tools; t->id; t++) {
        kindgi_begin_object(&o);
        kindgi_str_member_(&o, "id", t->id);
        kindgi_str_member_(&o, "version", t->version);
        kindgi_str_member_(&o, "description", t->description);
        kindgi_raw_member_(&o, "input", t->input_schema);
        kindgi_raw_member_(&o, "output", t->output_schema);
        kindgi_raw_member_(&o, "limits", t->limits);
        kindgi_raw_member_(&o, "network", t->network);
        kindgi_raw_member_(&o, "effects", t->effects);
        kindgi_raw_member_(&o, "mutating", t->mutating);
        kindgi_raw_member_(&o, "needs", t->needs);
        kindgi_raw_member_(&o, "needsSpec", t->needs_spec);
        kindgi_str_member_(&o, "sandbox", t->sandbox);
        kindgi_end_object(&o);
    }
    kindgi_end_array(&o);
    kindgi_key(&o, "checkSpecs");
    kindgi_begin_array(&o);
    for (const kindgi_check *c = kindgi_checks; c->id; c++) {
        kindgi_begin_object(&o);
        kindgi_str_member_(&o, "id", c->id);
        kindgi_str_member_(&o, "guardrail", c->guardrail);
        kindgi_str_member_(&o, "kind", c->kind);
        kindgi_raw_member_(&o, "action", c->action);
        kindgi_str_member_(&o, "severity", c->severity);
        kindgi_raw_member_(&o, "configSchema", c->config_schema);
        kindgi_raw_member_(&o, "limits", c->limits);
        kindgi_raw_member_(&o, "network", c->network);
        kindgi_str_member_(&o, "name", c->name);
        kindgi_raw_member_(&o, "scope", c->scope);
        kindgi_str_member_(&o, "sandbox", c->sandbox);
        kindgi_end_object(&o);
    }
    kindgi_end_array(&o);
#ifdef KINDGI_ENV
    kindgi_raw_member_(&o, "env", KINDGI_ENV);
#endif
    kindgi_end_object(&o);
    kindgi_response_write_(o.b, (int32_t)o.n);
    free(o.b);
    return 0;
}

__attribute__((export_name("kindgi_call"))) int32_t kindgi_call(void) {
    int32_t n = kindgi_request_len_();
    char *req = malloc((size_t)n + 1);
    if (!req) abort();
    kindgi_request_read_(req);
    kindgi_json msg = {req, (size_t)n}, id;
    kindgi_out o = {0};
    o.first = 1;
    int status = 2; /* no handler */
    /* The request's members in one walk (the last of duplicates, as
     * kindgi_get): the input, most of the request, is skipped once. */
    kindgi_json k, v, kind = {0, 0}, tool = {0, 0}, input = {0, 0}, ctx = {0, 0};
    kindgi_json check = {0, 0}, config = {0, 0}, trace = {0, 0};
    size_t pos = 0;
    if (kindgi_type(msg) == KINDGI_OBJECT) {
        while (kindgi_next(msg, &pos, &k, &v)) {
            if (kindgi_key_is_(k, "kind")) kind = v;
            else if (kindgi_key_is_(k, "tool")) tool = v;
            else if (kindgi_key_is_(k, "input")) input = v;
            else if (kindgi_key_is_(k, "ctx")) ctx = v;
            else if (kindgi_key_is_(k, "check")) check = v;
            else if (kindgi_key_is_(k, "config")) config = v;
            else if (kindgi_key_is_(k, "trace")) trace = v;
        }
    }
    if (kindgi_string_is(kind, "invoke")) {
        id = kindgi_get(tool, "id");
        for (const kindgi_tool *t = kindgi_tools; t->id; t++) {
            if (kindgi_string_is(id, t->id)) {
                status = t->fn(input, ctx, &o) ? 1 : 0;
                break;
            }
        }
    } else if (kindgi_string_is(kind, "check-invoke")) {
        id = kindgi_get(check, "id");
        for (const kindgi_check *c = kindgi_checks; c->id; c++) {
            if (kindgi_string_is(id, c->id)) {
                status = c->fn(config, trace, &o) ? 1 : 0;
                break;
            }
        }
    } else {
        status = kindgi_throw(&o, "TypeError", "unknown request kind");
    }
    fflush(stdout);
    fflush(stderr);
    if (status == 0 && o.thrown) status = 1;
    if (status == 0 && o.n == 0) kindgi_write_null(&o); /* a handler that wrote nothing answers null */
    if (status != 2) kindgi_response_write_(o.b, (int32_t)o.n);
    free(o.b);
    free(req);
    return status;
}

#endif /* __wasm__ */
#endif /* KINDGI_IMPLEMENTATION */
#endif /* KINDGI_H */
