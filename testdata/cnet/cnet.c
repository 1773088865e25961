/* cnet: a test pack that reaches the network through packd with the C
 * SDK's kindgi_http. net.fetch sends the request its input describes
 * ({url, method, body}), with the call's secret apiToken as a bearer
 * token, and answers {status, body, seen} (seen: the X-Seen header of the
 * response) or, when packd refused or failed it, {reason, message}; with
 * "nonce": true it adds NONCE_BYTES random bytes in hex (random_get), as
 * "nonce", and how long the request took by the clock, as "tookNs". */
#define KINDGI_IMPLEMENTATION
#include "../../sdk/c/kindgi.h"
#include <time.h>
#include <unistd.h>

/* NONCE_BYTES: how many random bytes "nonce" draws (a replay test builds
 * the pack with another count, to see the replay diverge there). */
#define NONCE_BYTES 8

static int fetch(kindgi_json input, kindgi_json ctx, kindgi_out *out) {
    char *url = kindgi_string(kindgi_get(input, "url"), NULL);
    if (!url) return kindgi_throw(out, "TypeError", "url is not a string");
    char *method = kindgi_string(kindgi_get(input, "method"), NULL);
    size_t body_len = 0;
    char *body = kindgi_string(kindgi_get(input, "body"), &body_len);
    char *token = kindgi_string(kindgi_get(kindgi_get(ctx, "secrets"), "apiToken"), NULL);
    kindgi_out headers = {0};
    headers.first = 1;
    kindgi_begin_object(&headers);
    if (token) {
        char *bearer = malloc(strlen(token) + 8);
        if (!bearer) abort();
        strcpy(bearer, "Bearer ");
        strcat(bearer, token);
        kindgi_key(&headers, "Authorization");
        kindgi_begin_array(&headers);
        kindgi_write_cstring(&headers, bearer);
        kindgi_end_array(&headers);
        free(bearer);
    }
    kindgi_end_object(&headers);
    kindgi_put_(&headers, "", 1); /* NUL-terminated */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    kindgi_http_response r;
    int rc = kindgi_http(method, url, headers.b, body, body_len, &r);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    kindgi_begin_object(out);
    int nonce = 0;
    if (kindgi_bool(kindgi_get(input, "nonce"), &nonce) && nonce) {
        unsigned char b[NONCE_BYTES];
        char hex[2 * NONCE_BYTES + 1];
        if (getentropy(b, sizeof b) != 0) abort();
        for (int i = 0; i < NONCE_BYTES; i++) snprintf(hex + 2 * i, 3, "%02x", b[i]);
        kindgi_key(out, "nonce"); kindgi_write_cstring(out, hex);
        kindgi_key(out, "tookNs");
        kindgi_write_int(out, (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
    }
    if (rc != 0) {
        kindgi_key(out, "reason"); kindgi_write_cstring(out, r.error_reason);
        kindgi_key(out, "message"); kindgi_write_cstring(out, r.error_message ? r.error_message : "");
    } else {
        kindgi_key(out, "status"); kindgi_write_int(out, r.status);
        kindgi_key(out, "body"); kindgi_write_string(out, r.body, r.body_len);
        size_t pos = 0;
        kindgi_json k, v;
        if (kindgi_next(kindgi_get(r.headers, "X-Seen"), &pos, &k, &v)) {
            kindgi_key(out, "seen"); kindgi_write_json(out, v);
        }
    }
    kindgi_end_object(out);
    kindgi_http_free(&r);
    free(headers.b);
    free(url); free(method); free(body); free(token);
    return KINDGI_OK;
}

const kindgi_tool kindgi_tools[] = {{"net.fetch", fetch}, {"net.offline", fetch}, {0}};
const kindgi_check kindgi_checks[] = {{0}};
