/* conformance: the conformance fixture pack (wasm-examples/conformance,
 * PROTOCOL-NOTES §8) in C, tool for tool: the black-box suite runs against
 * both. */
#define KINDGI_IMPLEMENTATION
#define KINDGI_ENV "{\"required\":[],\"optional\":[\"CONFORMANCE_VISIBLE\"]}"
#include "../../sdk/c/kindgi.h"

#include <time.h>

extern char **environ;

static int echo(kindgi_json in, kindgi_json ctx, kindgi_out *o) {
    (void)ctx;
    size_t n;
    char *m = kindgi_string(kindgi_get(in, "message"), &n);
    if (!m) return kindgi_throw(o, "TypeError", "message is not a string");
    kindgi_begin_object(o);
    kindgi_key(o, "message");
    kindgi_write_string(o, m, n);
    kindgi_end_object(o);
    free(m);
    return KINDGI_OK;
}

static int bad_output(kindgi_json in, kindgi_json ctx, kindgi_out *o) {
    (void)in, (void)ctx;
    kindgi_begin_object(o);
    kindgi_key(o, "message");
    kindgi_write_int(o, 42);
    kindgi_end_object(o);
    return KINDGI_OK;
}

static void member_or_empty(kindgi_out *o, kindgi_json ctx, const char *key) {
    kindgi_json v = kindgi_get(ctx, key);
    kindgi_key(o, key);
    if (v.p) {
        kindgi_write_json(o, v);
    } else {
        kindgi_begin_object(o);
        kindgi_end_object(o);
    }
}

static int context(kindgi_json in, kindgi_json ctx, kindgi_out *o) {
    (void)in;
    kindgi_begin_object(o);
    kindgi_key(o, "tenantId");
    kindgi_write_json(o, kindgi_get(ctx, "tenantId"));
    kindgi_key(o, "runId");
    kindgi_write_json(o, kindgi_get(ctx, "runId"));
    member_or_empty(o, ctx, "env");
    member_or_empty(o, ctx, "secrets");
    member_or_empty(o, ctx, "config");
    static const char *const optional[] = {"requestId", "idempotencyKey", "projectId", "orgId", "settings"};
    for (size_t i = 0; i < sizeof optional / sizeof *optional; i++) {
        kindgi_json v = kindgi_get(ctx, optional[i]);
        if (v.p) {
            kindgi_key(o, optional[i]);
            kindgi_write_json(o, v);
        }
    }
    kindgi_end_object(o);
    return KINDGI_OK;
}

static int defaults(kindgi_json in, kindgi_json ctx, kindgi_out *o) {
    (void)ctx;
    kindgi_write_json(o, in);
    return KINDGI_OK;
}

static void sleep_ms(double ms) {
    if (ms <= 0) return;
    struct timespec ts = {(time_t)(ms / 1000), (long)((long long)ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int hold(kindgi_json in, kindgi_json ctx, kindgi_out *o) {
    (void)ctx;
    double ms = 0;
    char *release = kindgi_string(kindgi_get(in, "release"), NULL);
    kindgi_number(kindgi_get(in, "ms"), &ms);
    printf("hold: %s\n", release ? release : "");
    fflush(stdout);
    free(release);
    sleep_ms(ms);
    kindgi_begin_object(o);
    kindgi_key(o, "released");
    kindgi_write_bool(o, 1);
    kindgi_end_object(o);
    return KINDGI_OK;
}

static int noisy(kindgi_json in, kindgi_json ctx, kindgi_out *o) {
    (void)in, (void)ctx;
    printf("noisy: a line on stdout\n");
    printf("{\"v\":2,\"kind\":\"result\",\"output\":{\"ok\":false}}\n");
    fprintf(stderr, "noisy: a line on stderr\n");
    kindgi_begin_object(o);
    kindgi_key(o, "ok");
    kindgi_write_bool(o, 1);
    kindgi_end_object(o);
    return KINDGI_OK;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int process_env(kindgi_json in, kindgi_json ctx, kindgi_out *o) {
    (void)in, (void)ctx;
    size_t n = 0;
    while (environ && environ[n]) n++;
    char **names = calloc(n + 1, sizeof *names);
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(environ[i], '=');
        size_t len = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
        names[i] = strndup(environ[i], len);
    }
    qsort(names, n, sizeof *names, by_name);
    kindgi_begin_object(o);
    kindgi_key(o, "names");
    kindgi_begin_array(o);
    for (size_t i = 0; i < n; i++) kindgi_write_cstring(o, names[i]);
    kindgi_end_array(o);
    kindgi_end_object(o);
    return KINDGI_OK;
}

static int sleep_tool(kindgi_json in, kindgi_json ctx, kindgi_out *o) {
    (void)ctx;
    double ms = 0;
    kindgi_number(kindgi_get(in, "ms"), &ms);
    sleep_ms(ms);
    kindgi_begin_object(o);
    kindgi_key(o, "slept");
    kindgi_write_number(o, ms);
    kindgi_end_object(o);
    return KINDGI_OK;
}

static int throws(kindgi_json in, kindgi_json ctx, kindgi_out *o) {
    (void)in, (void)ctx;
    return kindgi_throw(o, "Error", "boom");
}

/* The length JavaScript gives a string: UTF-16 code units. */
static size_t utf16_length(const char *s, size_t n) {
    size_t units = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c & 0xC0) == 0x80) continue; /* a continuation byte */
        units += c >= 0xF0 ? 2 : 1;
    }
    return units;
}

/* JavaScript's String.prototype.trim: ASCII whitespace and the Unicode
 * spaces and line terminators it names. */
static size_t js_space(const char *s, size_t n) {
    static const char *const wide[] = {"\xC2\xA0", "\xE1\x9A\x80", "\xE2\x80\x80", "\xE2\x80\x81", "\xE2\x80\x82",
        "\xE2\x80\x83", "\xE2\x80\x84", "\xE2\x80\x85", "\xE2\x80\x86", "\xE2\x80\x87", "\xE2\x80\x88", "\xE2\x80\x89",
        "\xE2\x80\x8A", "\xE2\x80\xA8", "\xE2\x80\xA9", "\xE2\x80\xAF", "\xE2\x81\x9F", "\xE3\x80\x80", "\xEF\xBB\xBF"};
    if (n && strchr(" \t\n\v\f\r", s[0]) && s[0]) return 1;
    for (size_t i = 0; i < sizeof wide / sizeof *wide; i++) {
        size_t l = strlen(wide[i]);
        if (n >= l && !memcmp(s, wide[i], l)) return l;
    }
    return 0;
}

static size_t js_space_before(const char *s, size_t n) {
    for (size_t l = 1; l <= 3 && l <= n; l++) {
        if (js_space(s + n - l, l) == l) return l;
    }
    return 0;
}

static int min_length(kindgi_json config, kindgi_json trace, kindgi_out *o) {
    double min = 1;
    kindgi_number(kindgi_get(config, "minLength"), &min);
    size_t n = 0, l;
    char *s = kindgi_string(kindgi_get(trace, "output"), &n);
    const char *p = s ? s : "";
    while ((l = js_space(p, n)) > 0) p += l, n -= l;
    while ((l = js_space_before(p, n)) > 0) n -= l;
    int passed = (double)utf16_length(p, n) >= min;
    free(s);
    kindgi_begin_object(o);
    kindgi_key(o, "passed");
    kindgi_write_bool(o, passed);
    if (!passed) {
        kindgi_key(o, "reason");
        kindgi_write_cstring(o, "too short");
    }
    kindgi_end_object(o);
    return KINDGI_OK;
}

static int check_throws(kindgi_json config, kindgi_json trace, kindgi_out *o) {
    (void)config, (void)trace;
    return kindgi_throw(o, "Error", "check boom");
}

/* Each entry says what index.json says of it: packd index writes the
 * index from this module. */
const kindgi_tool kindgi_tools[] = {
    {.id = "conformance.echo", .fn = echo, .version = "1.0.0",
     .description = "Answers with its message.",
     .input_schema = "{\"additionalProperties\":false,\"properties\":{\"message\":{\"minLength\":1,\"type\":\"string\"}},\"required\":[\"message\"],\"type\":\"object\"}",
     .output_schema = "{\"properties\":{\"message\":{\"type\":\"string\"}},\"required\":[\"message\"],\"type\":\"object\"}"},
    {.id = "conformance.bad-output", .fn = bad_output, .version = "1.0.0",
     .input_schema = "{\"type\":\"object\"}",
     .output_schema = "{\"properties\":{\"message\":{\"type\":\"string\"}},\"required\":[\"message\"],\"type\":\"object\"}"},
    {.id = "conformance.context", .fn = context, .version = "1.0.0",
     .input_schema = "{\"type\":\"object\"}",
     .output_schema = "{\"type\":\"object\"}",
     .effects = "[{\"kind\":\"reads\",\"resource\":\"ctx\"}]", .mutating = "false", .sandbox = "strict"},
    {.id = "conformance.defaults", .fn = defaults, .version = "1.0.0",
     .input_schema = "{\"properties\":{\"greeting\":{\"default\":\"Hello\",\"type\":\"string\"},\"name\":{\"type\":\"string\"},\"options\":{\"default\":{},\"properties\":{\"loud\":{\"default\":false,\"type\":\"boolean\"}},\"type\":\"object\"}},\"required\":[\"name\"],\"type\":\"object\"}",
     .output_schema = "{\"type\":\"object\"}"},
    {.id = "conformance.hold", .fn = hold, .version = "1.0.0",
     .input_schema = "{\"properties\":{\"ms\":{\"minimum\":0,\"type\":\"integer\"},\"release\":{\"minLength\":1,\"type\":\"string\"}},\"required\":[\"release\",\"ms\"],\"type\":\"object\"}",
     .output_schema = "{\"properties\":{\"released\":{\"type\":\"boolean\"}},\"required\":[\"released\"],\"type\":\"object\"}"},
    {.id = "conformance.noisy", .fn = noisy, .version = "1.0.0",
     .input_schema = "{\"type\":\"object\"}",
     .output_schema = "{\"properties\":{\"ok\":{\"type\":\"boolean\"}},\"required\":[\"ok\"],\"type\":\"object\"}"},
    {.id = "conformance.process-env", .fn = process_env, .version = "1.0.0",
     .input_schema = "{\"type\":\"object\"}",
     .output_schema = "{\"properties\":{\"names\":{\"items\":{\"type\":\"string\"},\"type\":\"array\"}},\"required\":[\"names\"],\"type\":\"object\"}"},
    {.id = "conformance.sleep", .fn = sleep_tool, .version = "1.0.0",
     .input_schema = "{\"properties\":{\"ms\":{\"minimum\":0,\"type\":\"integer\"}},\"required\":[\"ms\"],\"type\":\"object\"}",
     .output_schema = "{\"properties\":{\"slept\":{\"type\":\"integer\"}},\"required\":[\"slept\"],\"type\":\"object\"}"},
    {.id = "conformance.throws", .fn = throws, .version = "1.0.0",
     .input_schema = "{\"type\":\"object\"}",
     .output_schema = "{\"type\":\"object\"}"},
    {0},
};

const kindgi_check kindgi_checks[] = {
    {.id = "conformance.checks.min-length", .fn = min_length, .guardrail = "conformance.min-length", .action = "{\"on-violation\":\"halt\"}", .severity = "error",
     .config_schema = "{\"properties\":{\"minLength\":{\"default\":1,\"minimum\":0,\"type\":\"integer\"}},\"type\":\"object\"}"},
    {.id = "conformance.checks.throws", .fn = check_throws, .guardrail = "conformance.check-throws", .action = "{\"on-violation\":\"log-only\"}"},
    {0},
};
